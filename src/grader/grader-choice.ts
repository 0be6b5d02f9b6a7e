/**
 * Which grader decides: `ours` (the fast path, with the symbolic step in the sandbox) or
 * `math-verify` (Hugging Face's Math-Verify, run in the sandbox's jail). Commands that grade
 * (`grade`, `eval`) take `--grader NAME` and resolve it here.
 */
import { gradeAnswer } from './grade-answer.ts';
import { gradeWithMathVerify } from './math-verify-grader.ts';
import type { Grader } from './types.ts';

export const GRADER_NAMES = ['ours', 'math-verify'] as const;
export type GraderName = (typeof GRADER_NAMES)[number];

/** The grader of that name. */
export function graderFor(name: GraderName): Grader {
  return name === 'math-verify' ? gradeWithMathVerify : gradeAnswer;
}
