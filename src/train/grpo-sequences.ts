/**
 * Kept GRPO groups → the sequences one GRPO step trains on, pure.
 *
 * A sequence is the prompt's ids followed by every segment's ids, as the engine returned them
 * (never re-tokenized). Loss mask: 0 on the prompt and on interpreter output, 1 on model
 * tokens. `oldLogprobs[t]` is the behaviour policy's log π(x_t | x_<t) recorded by the engine
 * when segment t was generated, so a trajectory resumed across steps (partial rollout) carries
 * each segment's own logprobs from the policy version that produced it, and the importance
 * ratio π_θ / π_behaviour corrects the older segments instead of treating them as on-policy.
 * Given the version the step trains from, `policyLag[t]` says how far behind it token t's
 * sampler was (the trainer keeps the numeric gap of lag-0 tokens apart from older segments').
 * Trajectories with a missing advantage, without token ids or logprobs, or (on request) cut
 * by a budget are left out and counted; a zero advantage is not a reason (see `grpoSequence`).
 */
import type { GroupOutcome } from '../rollout/types.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import type { GrpoSequence } from './types.ts';

export type GrpoSequenceOptions = {
  /** Leave out trajectories cut by the token or tool-call budget (their reward says little). */
  maskTruncated?: boolean;
  /** Leave out trajectories whose last turn wrote neither code nor an answer (finish `no-answer`). */
  maskVoid?: boolean;
  /** Leave out trajectories longer than this many tokens (the trainer's context). */
  maxTokens?: number;
  /**
   * The policy version the step trains from: each sequence then carries every token's lag behind
   * it (`policyLag`), so the trainer reports the numeric engine-vs-trainer gap of the tokens
   * sampled by these weights apart from that of older segments.
   */
  policyVersion?: number;
};

/** What `policyLag` holds for a segment whose sampling weights are unknown. */
export const UNKNOWN_POLICY_LAG = 255;

export type GrpoSequenceSkip =
  | 'advantage-missing'
  | 'text-only'
  | 'logprobs-missing'
  | 'truncated'
  | 'void'
  | 'too-long';

export type GrpoBatch = {
  sequences: GrpoSequence[];
  /** The trajectory id of each sequence, in order. */
  trajectoryIds: string[];
  skipped: Partial<Record<GrpoSequenceSkip, number>>;
};

/** Builds the training batch of a step from its kept groups. */
export function grpoBatch(groups: readonly GroupOutcome[], options: GrpoSequenceOptions = {}): GrpoBatch {
  const batch: GrpoBatch = { sequences: [], trajectoryIds: [], skipped: {} };
  for (const group of groups) {
    if (!group.kept) continue;
    group.trajectories.forEach((trajectory, index) => {
      const built = grpoSequence(trajectory, group.advantages[index] ?? null, options);
      if (typeof built === 'string') {
        batch.skipped[built] = (batch.skipped[built] ?? 0) + 1;
        return;
      }
      batch.sequences.push(built);
      batch.trajectoryIds.push(trajectory.id);
    });
  }
  return batch;
}

/** One trajectory as a GRPO sequence, or why it is left out. */
export function grpoSequence(
  trajectory: Trajectory,
  advantage: number | null,
  options: GrpoSequenceOptions = {},
): GrpoSequence | GrpoSequenceSkip {
  if (advantage === null) return 'advantage-missing';
  // A zero advantage stays: its tokens count in the token-mean normaliser (DAPO divides by every
  // response token of the batch, verl's token-mean by the whole response mask) and carry the KL.
  const reason = trajectory.finish?.reason;
  if (options.maskTruncated && (reason === 'max-tokens' || reason === 'max-tool-calls')) return 'truncated';
  if (options.maskVoid && reason === 'no-answer') return 'void';
  const promptIds = trajectory.prompt.tokenIds;
  if (promptIds === null) return 'text-only';
  const inputIds = [...promptIds];
  const lossMask: number[] = promptIds.map(() => 0);
  const oldLogprobs: number[] = promptIds.map(() => 0);
  const policyLag: number[] = promptIds.map(() => 0);
  const { policyVersion } = options;
  for (const segment of trajectory.segments) {
    if (segment.tokenIds === null) return 'text-only';
    inputIds.push(...segment.tokenIds);
    if (segment.kind === 'model') {
      if (segment.logprobs === null || segment.logprobs.length !== segment.tokenIds.length) {
        return 'logprobs-missing';
      }
      lossMask.push(...segment.tokenIds.map(() => 1));
      oldLogprobs.push(...segment.logprobs);
      const lag =
        policyVersion === undefined || segment.policyVersion === null
          ? UNKNOWN_POLICY_LAG
          : Math.min(Math.max(policyVersion - segment.policyVersion, 0), UNKNOWN_POLICY_LAG);
      policyLag.push(...segment.tokenIds.map(() => lag));
    } else {
      lossMask.push(...segment.tokenIds.map(() => 0));
      oldLogprobs.push(...segment.tokenIds.map(() => 0));
      policyLag.push(...segment.tokenIds.map(() => 0));
    }
  }
  if (options.maxTokens !== undefined && inputIds.length > options.maxTokens) return 'too-long';
  return policyVersion === undefined
    ? { inputIds, lossMask, oldLogprobs, advantage }
    : { inputIds, lossMask, oldLogprobs, advantage, policyLag };
}
