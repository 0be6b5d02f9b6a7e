/**
 * Builds report.html for run folders: reads each folder's config, trajectories and summary
 * (recomputing the summary from the trajectories when the run was killed before writing it)
 * and renders them side by side.
 */
import { writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { Trajectory } from '../trajectory/trajectory.ts';
import type { BenchmarkProblem } from './benchmark-problem.ts';
import { EvalRunFormatError } from './eval-errors.ts';
import type { AnswerEquivalence } from './majority-vote.ts';
import { type ReportRun, renderReport } from './report-html.ts';
import { RUN_FILES, readRunJson, readRunTrajectories } from './run-folder.ts';
import { type RunSummary, summarizeRun } from './run-summary.ts';
import { readGrade } from './trajectory-grade.ts';

/** Reads one run folder for the report. */
export async function readRunForReport(
  folder: string,
  { equivalent }: { equivalent: AnswerEquivalence },
): Promise<ReportRun> {
  const trajectories = await readRunTrajectories(folder);
  const config = (await readRunJson(folder, RUN_FILES.config)) as Record<string, unknown> | null;
  let summary = (await readRunJson(folder, RUN_FILES.summary)) as RunSummary | null;
  if (summary === null) {
    if (trajectories.length === 0) {
      throw new EvalRunFormatError(`${folder} holds neither ${RUN_FILES.summary} nor any trajectory`);
    }
    summary = await summarizeRun({
      benchmark: typeof config?.benchmark === 'string' ? config.benchmark : basename(resolve(folder)),
      problems: problemsOf(trajectories),
      k:
        typeof config?.k === 'number'
          ? config.k
          : Math.max(...trajectories.map((trajectory) => trajectory.sample)) + 1,
      trajectories,
      equivalent,
    });
  } else if (!Array.isArray(summary.perProblem) || typeof summary.avgAtK !== 'number') {
    throw new EvalRunFormatError(
      `${join(folder, RUN_FILES.summary)}: not a run summary (no perProblem / avgAtK)`,
    );
  }
  return { label: basename(resolve(folder)), summary, trajectories, config };
}

/** The problems a set of graded trajectories covers, in order of first appearance. */
function problemsOf(trajectories: readonly Trajectory[]): BenchmarkProblem[] {
  const problems = new Map<string, BenchmarkProblem>();
  for (const trajectory of trajectories) {
    if (trajectory.problemId === null || problems.has(trajectory.problemId)) continue;
    const reference = readGrade(trajectory)?.reference ?? '';
    problems.set(trajectory.problemId, { id: trajectory.problemId, problem: '', answer: reference });
  }
  return [...problems.values()];
}

/** Writes `<first folder>/report.html` (or `outFile`) comparing the given run folders; returns its path. */
export async function writeRunReport(
  folders: readonly string[],
  { equivalent, outFile }: { equivalent: AnswerEquivalence; outFile?: string },
): Promise<string> {
  if (folders.length === 0) throw new RangeError('writeRunReport needs at least one run folder');
  const runs = await Promise.all(folders.map((folder) => readRunForReport(folder, { equivalent })));
  // Two folders with the same name would be indistinguishable in the legend.
  const labels = runs.map((run) => run.label);
  const distinct = runs.map((run, index) =>
    labels.indexOf(run.label) === index ? run : { ...run, label: resolve(folders[index] ?? run.label) },
  );
  const path = outFile ?? join(folders[0] as string, RUN_FILES.report);
  await writeFile(path, renderReport(distinct));
  return path;
}
