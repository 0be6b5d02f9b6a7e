/**
 * Resume safety for every long job (eval, SFT, rollouts, RL, synthesis). A run's identity is
 * the plain JSON object of everything that defines its results (benchmark, k, limit, sampling,
 * budgets, dialect, prompt, engine and model, …) and nothing that does not (concurrency,
 * output folder, timeouts, where the sandbox runs). It is saved with the run; a resume builds
 * the identity of the new command line the same way and `assertSameRun` refuses, before
 * anything is written, when a field differs — listing each field with the saved and the new
 * value and saying how to start a separate run instead.
 *
 *   const identity = { benchmark: 'aime24', k: 4, sampling: { temperature: 0.6, topP: 0.95 } };
 *   await writeRunJson(dir, 'config.json', { ...config, identity });          // first start
 *   assertSameRun({ run: dir, saved: saved.identity, current: identity,        // on --resume
 *                   fresh: 'pass another --out to start a new run' });
 *   identityHash(identity)   // 16 hex digits, e.g. to name or index runs
 *
 * Comparison is structural on canonical JSON (object keys in any order; `undefined` fields
 * are dropped, so write absent values as null). A field present on one side only differs.
 */
import { createHash } from 'node:crypto';
import { AgentMathError } from './agentmath-error.ts';

export type IdentityValue =
  | string
  | number
  | boolean
  | null
  | IdentityValue[]
  | { [key: string]: IdentityValue };
export type RunIdentity = { [field: string]: IdentityValue };

/** One differing field: its dotted path and the saved and new values (absent: undefined). */
export type IdentityDifference = {
  field: string;
  saved: IdentityValue | undefined;
  current: IdentityValue | undefined;
};

/** The code of the error a refused resume throws (the CLI exits with status 2). */
export const RUN_IDENTITY_MISMATCH = 'RUN_IDENTITY_MISMATCH';

/** JSON with object keys sorted at every level, `undefined` fields dropped. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
    return Object.fromEntries(entries.map(([key, item]) => [key, sortKeys(item)]));
  }
  return value;
}

/** A short stable fingerprint of an identity: the first 16 hex digits of SHA-256 of its canonical JSON. */
export function identityHash(identity: RunIdentity): string {
  return createHash('sha256').update(canonicalJson(identity)).digest('hex').slice(0, 16);
}

function isPlainObject(value: unknown): value is Record<string, IdentityValue> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The fields that differ, as dotted paths into nested objects (arrays compare whole). */
export function diffIdentity(saved: RunIdentity, current: RunIdentity): IdentityDifference[] {
  const differences: IdentityDifference[] = [];
  const walk = (path: string, left: IdentityValue | undefined, right: IdentityValue | undefined) => {
    if (isPlainObject(left) && isPlainObject(right)) {
      const keys = [...new Set([...Object.keys(left), ...Object.keys(right)])].sort();
      for (const key of keys) walk(path === '' ? key : `${path}.${key}`, left[key], right[key]);
      return;
    }
    if (canonicalJson(left) !== canonicalJson(right))
      differences.push({ field: path, saved: left, current: right });
  };
  walk('', saved, current);
  return differences;
}

function show(value: IdentityValue | undefined): string {
  return value === undefined ? '(absent)' : JSON.stringify(value);
}

/** A resume whose defining options differ from the saved run's. */
export class RunIdentityMismatchError extends AgentMathError {
  readonly differences: IdentityDifference[];
  constructor(run: string, differences: IdentityDifference[], fresh: string) {
    const lines = differences.map(
      (difference) =>
        `  ${difference.field}: saved ${show(difference.saved)}, now ${show(difference.current)}`,
    );
    super(
      RUN_IDENTITY_MISMATCH,
      `cannot resume ${run}: ${differences.length === 1 ? 'an option that defines the run differs' : `${differences.length} options that define the run differ`} from the saved run (nothing was written):\n` +
        `${lines.join('\n')}\n` +
        `Resume with the saved values, or ${fresh}.`,
    );
    this.differences = differences;
  }
}

/** Throws `RunIdentityMismatchError` unless the saved and current identities are equal. */
export function assertSameRun(options: {
  /** The run's folder or name, for the message. */
  run: string;
  saved: RunIdentity;
  current: RunIdentity;
  /** How to start a new run instead, e.g. "pass another --out to start a new run". */
  fresh: string;
}): void {
  const differences = diffIdentity(options.saved, options.current);
  if (differences.length > 0) throw new RunIdentityMismatchError(options.run, differences, options.fresh);
}
