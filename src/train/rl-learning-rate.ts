/**
 * The learning rate `train rl --model` takes when none is given, from the model's size, and
 * the parameter count of a Hugging Face folder read from its safetensors headers (no weights
 * loaded). The rule: 1e-6 from 1e9 parameters up — the value the field trains with at every
 * size it reports (the AgentMath paper at 30B, DAPO at 32B, verl's and TRL's GRPO recipes at
 * 0.5–8B) — and 1e-6 · √(1e9 / N) below, down to 10M parameters (1e-5): smaller models take
 * larger steps (a heuristic of ours, not a measured optimum). Models under 10M parameters,
 * trained from scratch here (the byte model, 0.8M), take 2e-4: the rate docs/rl.md measured RL
 * on the byte model at.
 */
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';

const ANCHOR_PARAMETERS = 1e9;
const ANCHOR_RATE = 1e-6;
/** Below this many parameters a model counts as small: trained from scratch here, checkpointed every step. */
export const SMALL_MODEL_PARAMETERS = 1e7;
const SMALL_MODEL_RATE = 2e-4;

export function defaultRlLearningRate(parameters: number): number {
  if (!(parameters > 0)) throw new RangeError(`parameters must be positive, got ${parameters}`);
  if (parameters < SMALL_MODEL_PARAMETERS) return SMALL_MODEL_RATE;
  const scaled = ANCHOR_RATE * Math.sqrt(Math.max(1, ANCHOR_PARAMETERS / parameters));
  // Two significant digits: the value is printed and saved with the run's configuration.
  return Number(scaled.toPrecision(2));
}

/** Σ numel over the folder's `*.safetensors` headers; null when it has none. */
export function safetensorsParameterCount(folder: string): number | null {
  const files = readdirSync(folder).filter((name) => name.endsWith('.safetensors'));
  if (files.length === 0) return null;
  let total = 0;
  for (const name of files) {
    const header = readHeader(join(folder, name));
    for (const [key, entry] of Object.entries(header)) {
      if (key === '__metadata__') continue;
      const shape = (entry as { shape?: unknown }).shape;
      if (!Array.isArray(shape)) throw new Error(`${join(folder, name)}: tensor ${key} has no shape`);
      total += shape.reduce((product: number, size) => product * Number(size), 1);
    }
  }
  return total;
}

function readHeader(path: string): Record<string, unknown> {
  const handle = openSync(path, 'r');
  try {
    const length = Buffer.alloc(8);
    readSync(handle, length, 0, 8, 0);
    const size = Number(length.readBigUInt64LE(0));
    const header = Buffer.alloc(size);
    readSync(handle, header, 0, size, 8);
    return JSON.parse(header.toString('utf8')) as Record<string, unknown>;
  } finally {
    closeSync(handle);
  }
}
