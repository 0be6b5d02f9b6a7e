/**
 * The Math-Verify backend: a `Grader` that asks Hugging Face's `math-verify` (locked in the
 * jail's environment) for the verdict, inside a sandbox session, never in this process — it
 * parses untrusted text with SymPy. Same results as our grader: `{ correct, extracted, reason }`
 * (`math-verify` when it says equal, `mismatch` otherwise, `timeout` past the time limit) and
 * `correct: null` with `grader-unavailable` when no session can run it (no sandbox, sandbox
 * down, or a jail without `math_verify`). Text that breaks Math-Verify is a wrong answer.
 */
import type { SandboxProvider } from '../sandbox/types.ts';
import { MATH_VERIFY_PRELUDE, mathVerifyCallCode } from './math-verify-program.ts';
import { PrimedSessionPool } from './primed-session-pool.ts';
import type { GradeResult, Grader } from './types.ts';

/** Time budget of one Math-Verify grade (its own default is 5 s for parsing plus 5 s for verifying). */
export const DEFAULT_MATH_VERIFY_TIMEOUT_MS = 10_000;
/** Responses longer than this are cut to their last part (as our extraction reads them). */
const MAX_PREDICTION_CHARS = 2_000_000;

/**
 * Sessions per provider: the grading pools of `grade`, `bench grader` and `eval` hold two
 * workers, and a session beyond the pool's size would wait for a slot that never frees.
 */
const MAX_SESSIONS = 2;

const pools = new WeakMap<SandboxProvider, PrimedSessionPool>();

function poolFor(provider: SandboxProvider): PrimedSessionPool {
  let pool = pools.get(provider);
  if (pool === undefined) {
    pool = new PrimedSessionPool(provider, MATH_VERIFY_PRELUDE, { maxSessions: MAX_SESSIONS });
    pools.set(provider, pool);
  }
  return pool;
}

/** Closes the Math-Verify sessions on a provider. */
export async function releaseMathVerifySessions(provider: SandboxProvider): Promise<void> {
  const pool = pools.get(provider);
  pools.delete(provider);
  await pool?.close();
}

type MathVerifyReply = { correct: boolean; extracted: string | null; error?: string };

function isReply(value: unknown): value is MathVerifyReply {
  const reply = value as MathVerifyReply | null;
  return typeof reply === 'object' && reply !== null && typeof reply.correct === 'boolean';
}

/** Grades with Math-Verify in the sandbox given in `options.sandbox`. */
export const gradeWithMathVerify: Grader = async (prediction, reference, options = {}) => {
  const { sandbox, timeoutMs = DEFAULT_MATH_VERIFY_TIMEOUT_MS } = options;
  if (sandbox === undefined) {
    return {
      correct: null,
      extracted: null,
      reason: 'grader-unavailable',
      cause: 'math-verify needs a sandbox',
    };
  }
  const text =
    prediction.length > MAX_PREDICTION_CHARS ? prediction.slice(-MAX_PREDICTION_CHARS) : prediction;
  const result = await poolFor(sandbox).run(mathVerifyCallCode(text, reference), timeoutMs);
  switch (result.status) {
    case 'unavailable':
      return { correct: null, extracted: null, reason: 'grader-unavailable', cause: result.cause };
    case 'timeout':
      return { correct: false, extracted: null, reason: 'timeout' };
    case 'error':
      return { correct: false, extracted: null, reason: 'parse-error' };
    case 'ok': {
      let reply: unknown;
      try {
        reply = JSON.parse(result.line);
      } catch {
        reply = null;
      }
      if (!isReply(reply)) return { correct: false, extracted: null, reason: 'parse-error' };
      return {
        correct: reply.correct,
        extracted: reply.extracted,
        reason: reply.correct ? 'math-verify' : reply.error === undefined ? 'mismatch' : 'parse-error',
      } satisfies GradeResult;
    }
  }
};
