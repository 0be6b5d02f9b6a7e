/**
 * The train/eval split, decided by the problem alone: SHA-256 of the canonical form; a problem
 * is held out for evaluation when the first digest byte is below 32 (one in eight), whoever
 * generates it and with whatever seed. Ids come from the same digest, so equal problems (up
 * to operand order of commutative operations) always share an id and a side.
 */
import { createHash } from 'node:crypto';
import { type ArithSpec, canonicalArith } from './arith-spec.ts';

export type ArithSplit = 'train' | 'eval';

/** Digest bytes below this go to eval: 32 / 256 = 1/8 of all problems. */
const EVAL_BYTE_LIMIT = 32;

function digest(spec: ArithSpec): Buffer {
  return createHash('sha256').update(canonicalArith(spec)).digest();
}

/** Which side of the split a problem is on. */
export function arithSplitOf(spec: ArithSpec): ArithSplit {
  return (digest(spec)[0] ?? 0) < EVAL_BYTE_LIMIT ? 'eval' : 'train';
}

/** A stable id: `arith-<kind>-<first 12 hex digits of the digest>`. */
export function arithProblemId(spec: ArithSpec): string {
  return `arith-${spec.kind}-${digest(spec).toString('hex').slice(0, 12)}`;
}
