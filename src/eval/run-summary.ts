/**
 * The summary of an evaluation run (DIR/summary.json): avg@k, pass@k and maj@k per problem and
 * overall, tool-use statistics, response lengths and finish reasons. Pure apart from the
 * injected answer equivalence used by the majority vote.
 *
 * Overall figures are means over problems: avg@k over problems with at least one sample,
 * pass@k over problems with at least k samples, maj@k over problems with at least one sample.
 * A complete run has exactly k samples for every problem, so all three use every problem.
 *
 * A trajectory whose grade has no verdict (`correct: null`, `grader-unavailable`: the symbolic
 * step's sandbox was down) is not a sample of any figure: it is counted apart
 * (`gradeUnavailable`), the run is not complete, and `eval --resume` grades it again.
 */
import type { Trajectory } from '../trajectory/trajectory.ts';
import type { BenchmarkProblem } from './benchmark-problem.ts';
import { EvalRunFormatError } from './eval-errors.ts';
import { type AnswerEquivalence, majorityVote } from './majority-vote.ts';
import { averageAccuracy, passAtK, reportedKs } from './pass-at-k.ts';
import type { ProblemSummary, RunSummary } from './run-summary-record.ts';
import { finishReasonCounts, lengthStats, toolUseStats } from './tool-use-stats.ts';
import { hasVerdict, readGrade } from './trajectory-grade.ts';

export type { ProblemSummary, RunSummary };

/**
 * Trajectories of the planned (problem, sample) pairs, one per pair: the first occurrence,
 * unless it has no verdict and a later one (its re-grade, appended on resume) has.
 */
export function plannedTrajectories(
  problems: readonly BenchmarkProblem[],
  k: number,
  trajectories: readonly Trajectory[],
): Trajectory[] {
  const ids = new Set(problems.map((problem) => problem.id));
  const seen = new Map<string, number>();
  const kept: Trajectory[] = [];
  for (const trajectory of trajectories) {
    if (trajectory.problemId === null || !ids.has(trajectory.problemId) || trajectory.sample >= k) continue;
    const key = `${trajectory.problemId}\u0000${trajectory.sample}`;
    const index = seen.get(key);
    if (index === undefined) {
      seen.set(key, kept.length);
      kept.push(trajectory);
    } else if (!hasVerdict(readGrade(kept[index]!)) && hasVerdict(readGrade(trajectory))) {
      kept[index] = trajectory;
    }
  }
  return kept;
}

/** Summarises the graded trajectories of a run over `problems` with `k` samples each. */
export async function summarizeRun({
  benchmark,
  problems,
  k,
  trajectories,
  equivalent,
}: {
  benchmark: string;
  problems: readonly BenchmarkProblem[];
  k: number;
  trajectories: readonly Trajectory[];
  equivalent: AnswerEquivalence;
}): Promise<RunSummary> {
  const kept = plannedTrajectories(problems, k, trajectories);
  const byProblem = new Map<string, Trajectory[]>(problems.map((problem) => [problem.id, []]));
  for (const trajectory of kept) byProblem.get(trajectory.problemId as string)?.push(trajectory);

  const perProblem: ProblemSummary[] = [];
  for (const problem of problems) {
    const all = (byProblem.get(problem.id) ?? []).sort((left, right) => left.sample - right.sample);
    const graded = all.map((trajectory) => {
      const grade = readGrade(trajectory);
      if (grade === null) {
        throw new EvalRunFormatError(
          `trajectory ${trajectory.id} has no grade in its meta (reference, correct)`,
        );
      }
      return { trajectory, grade };
    });
    const withVerdict = graded.flatMap(({ trajectory, grade }) =>
      grade.correct === null ? [] : [{ trajectory, grade: { ...grade, correct: grade.correct } }],
    );
    const samples = withVerdict.map((entry) => entry.trajectory);
    const grades = withVerdict.map(({ trajectory, grade }) => ({
      sample: trajectory.sample,
      grade,
      answer: grade.extracted ?? trajectory.answer,
    }));
    const correct = grades.filter((entry) => entry.grade.correct).length;
    const passes: Record<string, number> = {};
    for (const kValue of reportedKs(k)) {
      if (kValue <= samples.length) passes[kValue] = passAtK(samples.length, correct, kValue);
    }
    perProblem.push({
      id: problem.id,
      reference: problem.answer,
      samples: samples.length,
      correct,
      gradeUnavailable: all.length - samples.length,
      avg: averageAccuracy(grades.map((entry) => entry.grade.correct)),
      passAtK: passes,
      majority: await majorityVote(
        grades.map((entry) => ({ sample: entry.sample, answer: entry.answer, correct: entry.grade.correct })),
        equivalent,
      ),
      codeCallsPerTrajectory: toolUseStats(samples).codeCallsPerTrajectory,
    });
  }

  const sampled = perProblem.filter((entry) => entry.samples > 0);
  const gradeUnavailable = perProblem.reduce((total, entry) => total + entry.gradeUnavailable, 0);
  const withVerdict = kept.length - gradeUnavailable;
  const passAtKOverall: Record<string, number> = {};
  for (const kValue of reportedKs(k)) {
    const scored = perProblem.filter((entry) => entry.samples >= kValue);
    if (scored.length > 0) passAtKOverall[kValue] = mean(scored.map((entry) => entry.passAtK[kValue] ?? 0));
  }
  return {
    benchmark,
    k,
    problems: problems.length,
    trajectories: withVerdict,
    expectedTrajectories: problems.length * k,
    complete: withVerdict === problems.length * k,
    gradeUnavailable,
    avgAtK: mean(sampled.map((entry) => entry.avg)),
    passAtK: passAtKOverall,
    majAtK: mean(sampled.map((entry) => (entry.majority.correct ? 1 : 0))),
    toolUse: toolUseStats(kept),
    length: lengthStats(kept),
    finishReasons: finishReasonCounts(kept),
    perProblem,
  };
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((total, value) => total + value, 0) / values.length;
}
