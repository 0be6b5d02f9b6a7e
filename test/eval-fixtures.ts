/**
 * Fixture trajectories for the evaluation tests: small, hand-described records that pass the
 * Trajectory schema, with optional code calls and a stored grade.
 */
import type { ExecutionOutcome } from '../src/sandbox/types.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';

export type FixtureCall = 'ok' | 'error' | 'timeout';

/** A finished trajectory; `calls` lists code-call outcomes in order; `text` is the final model text. */
export function fixtureTrajectory({
  problemId,
  sample,
  answer,
  calls = [],
  text = answer === null ? 'I could not finish.' : `The answer is \\boxed{${answer}}.`,
  tokens = false,
  finish = answer === null ? 'no-answer' : 'answer',
  grade,
}: {
  problemId: string;
  sample: number;
  answer: string | null;
  calls?: FixtureCall[];
  text?: string;
  tokens?: boolean;
  finish?: NonNullable<Trajectory['finish']>['reason'];
  grade?: { reference: string; correct: boolean };
}): Trajectory {
  const ids = (value: string) => (tokens ? [...Buffer.from(value, 'utf8')] : null);
  const segments: Trajectory['segments'] = [];
  const toolCalls: Trajectory['toolCalls'] = [];
  calls.forEach((status, index) => {
    const code = `print(${index})`;
    const modelText = `<code>\n${code}\n</code>`;
    segments.push({
      kind: 'model',
      text: modelText,
      tokenIds: ids(modelText),
      logprobs: tokens ? ids(modelText)!.map(() => -0.5) : null,
      policyVersion: null,
      finishReason: 'stop',
      matchedStop: '</code>',
      step: null,
      replica: null,
    });
    const outcome: ExecutionOutcome =
      status === 'ok'
        ? { status: 'ok', stdout: `${index}\n`, stderr: '', ms: 3 }
        : status === 'error'
          ? { status: 'error', stdout: '', stderr: 'Traceback', exception: 'ZeroDivisionError', ms: 3 }
          : { status: 'timeout', stdout: '', limitMs: 1000 };
    toolCalls.push({ code, outcome, ms: 4 });
    const toolText = `\n<interpreter>\n${status}\n</interpreter>\n`;
    segments.push({ kind: 'tool', text: toolText, tokenIds: ids(toolText), toolCallIndex: index });
  });
  segments.push({
    kind: 'model',
    text,
    tokenIds: ids(text),
    logprobs: tokens ? ids(text)!.map(() => -0.5) : null,
    policyVersion: null,
    finishReason: 'stop',
    matchedStop: null,
    step: null,
    replica: null,
  });
  return {
    id: `${problemId}-s${sample}`,
    problemId,
    sample,
    dialect: 'tags',
    prompt: { text: `Solve ${problemId}`, tokenIds: ids(`Solve ${problemId}`) },
    segments,
    toolCalls,
    answer,
    finish: { reason: finish },
    timing: {
      startedAt: '2025-01-01T00:00:00.000Z',
      finishedAt: '2025-01-01T00:00:01.000Z',
      engineMs: 10,
      toolMs: 4,
    },
    ...(grade === undefined
      ? {}
      : {
          meta: {
            reference: grade.reference,
            correct: grade.correct,
            reason: grade.correct ? 'exact' : 'mismatch',
            extracted: answer,
          },
        }),
  };
}
