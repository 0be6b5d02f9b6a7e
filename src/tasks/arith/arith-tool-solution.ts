/**
 * Tool-augmented solutions in the AgentMath tags dialect: reasoning, a code block, the
 * interpreter output, a conclusion, the boxed answer. The code really runs
 * in a sandbox session and the output block is the dialect's own rendering of that outcome,
 * so a record is byte for byte what the agent loop would produce:
 *
 *   model: `<think>lead <code>\ncode\n</code>`   (ends at the dialect's stop string)
 *   tool:  `dialect.renderToolResult(outcome, { outputOpening })`  (`\n<interpreter>\n…\n</interpreter>\n`)
 *   model: `conclusion</think>\nThe answer is \boxed{output}.`
 *
 * The answer is the interpreter's output; a record is made only when it equals the reference.
 */
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
};

/** A written solution, or why none was: the code did not run cleanly, or printed something else. */
export type ArithToolSolutionResult =
  | { status: 'ok'; solution: TaskSolution; outcome: ExecutionOutcome }
  | { status: 'tool-failed'; outcome: ExecutionOutcome }
  | { status: 'mismatch'; output: string; expected: string };

/** Thrown when the dialect does not read the code block this writer wrote (a wiring bug). */
export class ArithDialectMismatchError extends AgentMathError {
  constructor(dialect: string) {
    super(
      'TASKS_DIALECT_MISMATCH',
      `arith tool solutions are written in the tags markup, which the "${dialect}" dialect does not read; use the tags dialect`,
    );
  }
}

/**
 * The first model turn: lead-in and code block, ending exactly at the stop string `</code>`,
 * and the text the dialect puts before the output (as the agent loop asks it to).
 */
function codeTurn(dialect: Dialect, lead: string, code: string): { text: string; outputOpening: string } {
  const text = `<think>${lead} <code>\n${code}\n</code>`;
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
  const turn = codeTurn(dialect, plan.lead, plan.code);
  const outcome = await session.execute(plan.code, { timeoutMs });
  if (outcome.status !== 'ok' || outcome.stderr.trim() !== '') return { status: 'tool-failed', outcome };
  const output = outcome.stdout.trim();
  if (output !== problem.answer) return { status: 'mismatch', output, expected: problem.answer };
  const solution: TaskSolution = {
    problem: taskProblemOf(problem),
    style: 'tool',
    segments: [
      { kind: 'model', text: turn.text },
      { kind: 'tool', text: dialect.renderToolResult(outcome, { outputOpening: turn.outputOpening }) },
      { kind: 'model', text: `${plan.conclusion}</think>\nThe answer is \\boxed{${output}}.` },
    ],
  };
  return { status: 'ok', solution, outcome };
}
