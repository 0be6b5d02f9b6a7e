/**
 * The grader contract. A grade records which rule decided, so every evaluation number can be
 * traced to the comparison that produced it.
 */
import type { SandboxProvider } from '../sandbox/types.ts';

export type GradeReason =
  | 'exact'
  | 'numeric'
  | 'structural'
  | 'symbolic'
  /** The Math-Verify backend said equal. */
  | 'math-verify'
  | 'no-answer'
  | 'mismatch'
  | 'timeout'
  | 'parse-error'
  /** The symbolic step could not run (sandbox unreachable, session killed): no verdict. */
  | 'grader-unavailable';

/**
 * A verdict (`correct` true or false), or no verdict (`correct: null`, reason
 * `grader-unavailable`, with the infrastructure failure in `cause`): an outage is never a
 * wrong answer.
 */
export type GradeResult =
  | {
      correct: boolean;
      /** The answer taken from the prediction (after extraction, before normalisation), or null. */
      extracted: string | null;
      reason: Exclude<GradeReason, 'grader-unavailable'>;
    }
  | { correct: null; extracted: string | null; reason: 'grader-unavailable'; cause: string };

export type GradeOptions = {
  /** Where symbolic checks run; without one, the symbolic step is skipped. */
  sandbox?: SandboxProvider;
  /** Time budget for the symbolic step. */
  timeoutMs?: number;
};

/** `grade(prediction, reference)`: prediction is a full response or a bare answer. */
export type Grader = (prediction: string, reference: string, options?: GradeOptions) => Promise<GradeResult>;
