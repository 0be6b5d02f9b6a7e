/**
 * Eval runs side by side as Markdown (`agentmath report DIR --compare DIR2 … --table`): each
 * run's accuracy, answer and code-use shares, and every compared run's paired difference against
 * the first over the problems both graded (sample 0 of each problem, so runs with k > 1 compare
 * their first samples). A trajectory whose grade has no verdict (an outage) is left out of both.
 */
import { basename } from 'node:path';
import { formatPairedDifference, pairedDifference } from './paired-difference.ts';
import { readRunTrajectories } from './run-folder.ts';
import { readGrade } from './trajectory-grade.ts';

export type EvalRunFigures = {
  folder: string;
  /** Problems with a verdict on sample 0: right or wrong. */
  correct: Map<string, boolean>;
  /** Trajectories of sample 0 with a verdict. */
  graded: number;
  answered: number;
  withCode: number;
  codeCalls: number;
  responseTokens: number;
};

/** Sample 0's verdict, boxed answer and code calls of every problem in an eval run folder. */
export async function readEvalRunFigures(folder: string): Promise<EvalRunFigures> {
  const figures: EvalRunFigures = {
    folder,
    correct: new Map(),
    graded: 0,
    answered: 0,
    withCode: 0,
    codeCalls: 0,
    responseTokens: 0,
  };
  for (const trajectory of await readRunTrajectories(folder)) {
    const grade = readGrade(trajectory);
    if (trajectory.problemId === null || trajectory.sample !== 0) continue;
    if (grade === null || grade.correct === null) continue;
    figures.correct.set(trajectory.problemId, grade.correct);
    figures.graded++;
    if (trajectory.answer !== null) figures.answered++;
    if (trajectory.toolCalls.length > 0) figures.withCode++;
    figures.codeCalls += trajectory.toolCalls.length;
    figures.responseTokens += responseTokenCount(trajectory.segments);
  }
  return figures;
}

function responseTokenCount(
  segments: readonly { kind: string; tokenIds?: readonly number[] | null }[],
): number {
  let count = 0;
  for (const segment of segments) if (segment.kind === 'model') count += segment.tokenIds?.length ?? 0;
  return count;
}

const percent = (part: number, whole: number) =>
  whole === 0 ? '–' : `${((100 * part) / whole).toFixed(1)}%`;

/** The Markdown table of the runs and the paired differences of each against the first. */
export function evalComparisonTable(runs: readonly EvalRunFigures[]): string {
  const lines = [
    '| run | problems | correct | boxed answer | with code | code calls / trajectory | response tokens / trajectory |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const run of runs) {
    const right = [...run.correct.values()].filter(Boolean).length;
    const per = (value: number) => (run.graded === 0 ? '–' : (value / run.graded).toFixed(2));
    lines.push(
      `| ${basename(run.folder)} | ${run.graded} | ${right} (${percent(right, run.graded)}) | ${percent(run.answered, run.graded)} | ${percent(run.withCode, run.graded)} | ${per(run.codeCalls)} | ${per(run.responseTokens).replace(/\.\d+$/, '')} |`,
    );
  }
  const [first, ...others] = runs;
  if (first !== undefined && others.length > 0) {
    lines.push('');
    for (const other of others) {
      const difference = pairedDifference(first.correct, other.correct);
      lines.push(
        `- ${basename(other.folder)} − ${basename(first.folder)}: ${
          difference.problems === 0 ? 'no problem graded in both' : formatPairedDifference(difference)
        }`,
      );
    }
  }
  return lines.join('\n');
}
