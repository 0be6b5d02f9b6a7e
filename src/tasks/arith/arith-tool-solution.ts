/**
 * Tool-augmented solutions in a dialect's markup (tags by default, or markdown): reasoning, a
 * code block, the interpreter output, a conclusion, the boxed answer. The code really runs
 * in a sandbox session and the output block is the dialect's own rendering of that outcome,
 * so a record is byte for byte what the agent loop would produce:
 *
 *   model: `<think>lead <code>\ncode\n</code>`   (ends at the dialect's stop string)
 *   tool:  `dialect.renderToolResult(outcome, { outputOpening })`  (`\n<interpreter>\n…\n</interpreter>\n`)
 *   model: `conclusion</think>\nThe answer is \boxed{output}.`
 *
 * In markdown (line-anchored fences, no reasoning wrapper) the same record reads
 * `lead\n```python\ncode\n```\n`, the ```` ```output ```` block, `conclusion\nThe answer is …`.
 *
 * The answer is the interpreter's output; a record is made only when it equals the reference.
 *
 * A spaced-level problem's record shows, for a share of problems (by a hash of the id), a first
 * program that copies the numbers as written and fails in the sandbox, its real error, and
 * the corrected program: two code turns. The rest write the corrected program first. Such a
 * problem wants a fresh session (see `opensWithFailingProgram`).
 *
 *   model: `<think>lead <code>\nliteral copy\n</code>`   tool: the rendered SyntaxError
 *   model: `fix <code>\ncode\n</code>`                  tool: the rendered output
 *   model: `conclusion</think>\nThe answer is \boxed{output}.`
 */
import { createHash } from 'node:crypto';
import type { Dialect } from '../../protocol/dialect.ts';
import { getDialect } from '../../protocol/dialects.ts';
import type { SandboxSession } from '../../sandbox/types.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import type { ExecutionOutcome } from '../../shared/execution-outcome.ts';
import type { TaskSolution } from '../types.ts';
import type { ArithProblem } from './arith-spec.ts';
import { taskProblemOf } from './arith-text-solution.ts';
import { arithToolPlan } from './arith-tool-plan.ts';

export type ArithToolSolutionOptions = {
  session: SandboxSession;
  /** Reads the code block and renders the output; the tags dialect (the default). */
  dialect?: Dialect;
  timeoutMs?: number;
  /** Spaced problems: the share whose record shows a failing first program (default 0.5). */
  failedFirstShare?: number;
};

/**
 * A written solution, or why none was: the code did not run cleanly, printed something else,
 * or (spaced problems) the first program meant to fail did not fail with a Python error.
 */
export type ArithToolSolutionResult =
  | { status: 'ok'; solution: TaskSolution; outcome: ExecutionOutcome }
  | { status: 'tool-failed'; outcome: ExecutionOutcome }
  | { status: 'mismatch'; output: string; expected: string }
  | { status: 'first-attempt-ran'; outcome: ExecutionOutcome };

/** Spaced problems whose record shows a failing first program, by default. */
export const DEFAULT_FAILED_FIRST_SHARE = 0.5;

/** A problem id's place in [0, 1), stable everywhere (first four bytes of its SHA-256). */
function idFraction(id: string): number {
  return createHash('sha256').update(id).digest().readUInt32BE(0) / 2 ** 32;
}

/** Whether a spaced problem's record shows a failing first program (a hash of the id below the share). */
export function showsFailedFirstAttempt(id: string, share = DEFAULT_FAILED_FIRST_SHARE): boolean {
  return idFraction(id) < share;
}

/**
 * Whether the record of `problem` starts with a program that fails. Give such a problem a
 * fresh session: the jail names cells by their number in the session (`File "<cell-1>"`), and
 * the agent loop runs a trajectory's first call in a fresh session, so the error shown is then
 * byte for byte the one a rollout reads.
 */
export function opensWithFailingProgram(problem: ArithProblem, share = DEFAULT_FAILED_FIRST_SHARE): boolean {
  return problem.spec.notation === 'spaced' && showsFailedFirstAttempt(problem.id, share);
}

/** Thrown when the dialect does not read the code block this writer wrote (a wiring bug). */
export class ArithDialectMismatchError extends AgentMathError {
  constructor(dialect: string) {
    super(
      'TASKS_DIALECT_MISMATCH',
      `the "${dialect}" dialect does not read the code block an arith tool solution writes in its markup`,
    );
  }
}

/**
 * A model turn: lead-in and code block, ending exactly at the dialect's stop string (`</code>`,
 * or the closing fence and its newline), and the text the dialect puts before the output (as
 * the agent loop asks it to). The first turn opens the reasoning (`<think>`) where the dialect
 * has such a wrapper.
 */
function codeTurn(
  dialect: Dialect,
  lead: string,
  code: string,
  opening: string,
): { text: string; outputOpening: string } {
  const { openText, closeText } = dialect.markup.code;
  const text = dialect.markup.lineAnchored
    ? `${opening}${lead}\n${openText}\n${code}\n${closeText}\n`
    : `${opening}${lead} ${openText}\n${code}\n${closeText}`;
  // The agent loop finds the code with the dialect; it must find exactly this code here too.
  const stop = dialect.stopStrings.find((candidate) => text.endsWith(candidate)) ?? null;
  const closed = stop === null ? null : dialect.closedCodeAtEnd(text, stop);
  if (closed === null || closed.code !== code) throw new ArithDialectMismatchError(dialect.name);
  return { text, outputOpening: closed.outputOpening };
}

/** Runs the problem's code in `session` and writes the solution around the real output. */
export async function writeArithToolSolution(
  problem: ArithProblem,
  options: ArithToolSolutionOptions,
): Promise<ArithToolSolutionResult> {
  const { session, dialect = getDialect('tags'), timeoutMs = 20_000 } = options;
  const plan = arithToolPlan(problem.spec);
  const segments: TaskSolution['segments'] = [];
  let lead = plan.lead;
  const reasoning = dialect.markup.reasoning;
  let opening = reasoning?.openText ?? '';
  if (plan.firstAttempt !== undefined) {
    if (opensWithFailingProgram(problem, options.failedFirstShare)) {
      const failing = codeTurn(dialect, plan.lead, plan.firstAttempt.code, opening);
      const failed = await session.execute(plan.firstAttempt.code, { timeoutMs });
      if (failed.status !== 'error') return { status: 'first-attempt-ran', outcome: failed };
      segments.push(
        { kind: 'model', text: failing.text },
        { kind: 'tool', text: dialect.renderToolResult(failed, { outputOpening: failing.outputOpening }) },
      );
      lead = plan.firstAttempt.fix;
      opening = '';
    } else lead = plan.directLead ?? plan.lead;
  }
  const turn = codeTurn(dialect, lead, plan.code, opening);
  const outcome = await session.execute(plan.code, { timeoutMs });
  if (outcome.status !== 'ok' || outcome.stderr.trim() !== '') return { status: 'tool-failed', outcome };
  const output = outcome.stdout.trim();
  if (output !== problem.answer) return { status: 'mismatch', output, expected: problem.answer };
  segments.push(
    { kind: 'model', text: turn.text },
    { kind: 'tool', text: dialect.renderToolResult(outcome, { outputOpening: turn.outputOpening }) },
    {
      kind: 'model',
      text: `${plan.conclusion}${reasoning?.closeText ?? ''}\nThe answer is \\boxed{${output}}.`,
    },
  );
  const solution: TaskSolution = { problem: taskProblemOf(problem), style: 'tool', segments };
  return { status: 'ok', solution, outcome };
}
