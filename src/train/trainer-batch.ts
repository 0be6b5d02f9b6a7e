/**
 * The binary batch format of the distributed trainer (`python/agentmath_train/batch_io.py`
 * reads it): no JSON arrays of numbers, so a step's batch at paper scale (512 sequences of
 * 16k tokens with masks, advantages and logprobs, ~170 MB) is written in one pass over typed
 * arrays. Layout, little-endian, every array 4-byte aligned:
 *   "AMB1" · u32 header length · header JSON (space-padded to a multiple of 8)
 *   · int32 lengths[n] · int32 inputIds[Σ] · float32 advantages[n]? · float32 oldLogprobs[Σ]?
 *   · uint8 lossMask[Σ] · uint8 policyLag[Σ]?
 * `policyLag[t]`: how many policy versions before the weights the step trains from token t was
 * sampled (0: by those weights; 255: unknown, or 255 and more). The trainer reports the
 * engine-vs-trainer logprob gap of the lag-0 tokens apart from the others' (`rolloutLogprobGap`,
 * `staleLogprobGap`).
 */
import { AgentMathError } from '../shared/agentmath-error.ts';

const MAGIC = 'AMB1';

/** One sequence of a batch; advantages and old logprobs only in GRPO batches. */
export type BatchSequence = {
  inputIds: readonly number[];
  lossMask: readonly number[];
  advantage?: number;
  oldLogprobs?: readonly number[];
  policyLag?: readonly number[];
};

/** Encodes sequences and the step's options (a JSON object, camelCase keys). */
export function encodeTrainerBatch(
  sequences: readonly BatchSequence[],
  options: Record<string, unknown> = {},
): Buffer {
  const count = sequences.length;
  const withAdvantages = count > 0 && sequences.every((sequence) => sequence.advantage !== undefined);
  const withLogprobs = count > 0 && sequences.every((sequence) => sequence.oldLogprobs !== undefined);
  const withLag = count > 0 && sequences.every((sequence) => sequence.policyLag !== undefined);
  let tokens = 0;
  sequences.forEach((sequence, index) => {
    const length = sequence.inputIds.length;
    if (length === 0) throw new AgentMathError('TRAINER_BATCH_INVALID', `sequence ${index} is empty`);
    if (
      sequence.lossMask.length !== length ||
      (withLogprobs && sequence.oldLogprobs?.length !== length) ||
      (withLag && sequence.policyLag?.length !== length)
    ) {
      throw new AgentMathError(
        'TRAINER_BATCH_INVALID',
        `sequence ${index}: lossMask, oldLogprobs and policyLag must have one entry per input id (${length})`,
      );
    }
    tokens += length;
  });
  const headerText = JSON.stringify({
    sequences: count,
    tokens,
    advantages: withAdvantages,
    oldLogprobs: withLogprobs,
    policyLag: withLag,
    options,
  });
  const headerBytes = Buffer.from(headerText, 'utf8');
  const headerLength = headerBytes.length + ((8 - (headerBytes.length % 8)) % 8);
  const size =
    8 +
    headerLength +
    4 * count +
    4 * tokens +
    (withAdvantages ? 4 * count : 0) +
    (withLogprobs ? 4 * tokens : 0) +
    tokens +
    (withLag ? tokens : 0);
  const buffer = Buffer.alloc(size, 0x20, undefined);
  buffer.write(MAGIC, 0, 'latin1');
  buffer.writeUInt32LE(headerLength, 4);
  headerBytes.copy(buffer, 8);
  let offset = 8 + headerLength;
  const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  for (const sequence of sequences) {
    view.setInt32(offset, sequence.inputIds.length, true);
    offset += 4;
  }
  for (const sequence of sequences) {
    for (const id of sequence.inputIds) {
      view.setInt32(offset, id, true);
      offset += 4;
    }
  }
  if (withAdvantages) {
    for (const sequence of sequences) {
      view.setFloat32(offset, sequence.advantage ?? 0, true);
      offset += 4;
    }
  }
  if (withLogprobs) {
    for (const sequence of sequences) {
      for (const value of sequence.oldLogprobs ?? []) {
        view.setFloat32(offset, value, true);
        offset += 4;
      }
    }
  }
  for (const sequence of sequences) {
    for (const value of sequence.lossMask) buffer[offset++] = value ? 1 : 0;
  }
  if (withLag) {
    for (const sequence of sequences) {
      for (const lag of sequence.policyLag ?? [])
        buffer[offset++] = Math.min(Math.max(Math.round(lag), 0), 255);
    }
  }
  return buffer;
}
