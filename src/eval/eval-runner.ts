/**
 * The evaluation runner: k samples of every problem, solved by an injected function, each
 * trajectory graded and appended to `trajectories.jsonl` the moment it finishes.
 *
 * Scheduling is request-level: a pool of `concurrency` workers pulls (problem, sample) pairs
 * from one queue, sample-major (sample 0 of every problem first), so there is no batch barrier
 * and early figures cover the whole benchmark. A resumed run skips the pairs already in the
 * file. When the signal aborts, in-flight trajectories are aborted and not written; they are
 * solved again on resume, so the file only ever holds complete, graded trajectories.
 *
 * A trajectory that ends with finish reason `error` (the engine or sandbox broke, after the
 * agent's retries) is not a model's answer: it goes to `errors.jsonl` instead and is solved
 * again on resume. After `maxConsecutiveErrors` such trajectories in a row the run stops, since
 * the infrastructure is evidently down.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { GradeResult } from '../grader/types.ts';
import { openTrajectoryWriter } from '../trajectory/index.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import type { BenchmarkProblem } from './benchmark-problem.ts';
import { EvalInfrastructureError, EvalOutputExistsError, EvalResumeMismatchError } from './eval-errors.ts';
import type { EvalRunnerConfig } from './eval-run-config.ts';
import type { AnswerEquivalence } from './majority-vote.ts';
import { folderHasEntries, RUN_FILES, readRunJson, readRunTrajectories, writeRunJson } from './run-folder.ts';
import { plannedTrajectories, type RunSummary, summarizeRun } from './run-summary.ts';
import { attachGrade, hasVerdict, readGrade } from './trajectory-grade.ts';

/** Produces one trajectory for (problem, sample); must honour `signal`. */
export type SolveTrajectory = (
  problem: BenchmarkProblem,
  sample: number,
  signal: AbortSignal,
) => Promise<Trajectory>;

/** Grades a finished trajectory against the problem's reference answer. */
export type GradeTrajectory = (trajectory: Trajectory, problem: BenchmarkProblem) => Promise<GradeResult>;

/** Counters after each finished trajectory; resumed trajectories count as done. */
export type EvalProgress = {
  done: number;
  total: number;
  /** Done when this invocation started (resumed work). */
  doneAtStart: number;
  correct: number;
  codeCalls: number;
  /** Trajectories in flight now. */
  running: number;
  /** Trajectories that ended in an infrastructure error in this invocation (not written). */
  failed: number;
  /** Done trajectories whose grade has no verdict (grader unavailable): not in `correct`'s base. */
  gradeUnavailable: number;
};

export type EvalRunOptions = {
  benchmark: { name: string; problems: readonly BenchmarkProblem[] };
  k: number;
  concurrency: number;
  outDir: string;
  resume: boolean;
  /**
   * The resolved configuration, saved to config.json at the start beside the runner's own
   * fields (`eval-run-config.ts`); each caller's record schema says what it holds.
   */
  config: Record<string, unknown>;
  solve: SolveTrajectory;
  grade: GradeTrajectory;
  equivalent: AnswerEquivalence;
  signal?: AbortSignal;
  onProgress?: (progress: EvalProgress) => void;
  /** Error-finished trajectories in a row that stop the run (default 2 × concurrency, at least 8). */
  maxConsecutiveErrors?: number;
  /** Receives warnings (a truncated last line removed on resume); default `process.emitWarning`. */
  onWarning?: (message: string) => void;
  now?: () => Date;
};

/**
 * `completed`: every pair is done. `interrupted`: the signal stopped it. `incomplete`: the queue
 * ran out but some trajectories ended in errors (see errors.jsonl); resuming retries them.
 */
export type EvalRunResult = {
  status: 'completed' | 'interrupted' | 'incomplete';
  summary: RunSummary;
  written: number;
  failed: number;
  done: number;
  total: number;
};

/** Runs (or resumes) an evaluation and writes config.json, trajectories.jsonl and summary.json. */
export async function runEval(options: EvalRunOptions): Promise<EvalRunResult> {
  const {
    benchmark,
    k,
    concurrency,
    outDir,
    solve,
    grade,
    signal,
    onProgress,
    now = () => new Date(),
  } = options;
  if (!Number.isInteger(k) || k < 1) throw new RangeError(`k must be a positive integer, got ${k}`);
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError(`concurrency must be a positive integer, got ${concurrency}`);
  }
  const existing = await prepareFolder(options);
  const runnerConfig: EvalRunnerConfig = {
    benchmark: benchmark.name,
    problems: benchmark.problems.length,
    k,
    concurrency,
    startedAt: now().toISOString(),
    resumed: existing.length > 0,
  };
  await writeRunJson(outDir, RUN_FILES.config, { ...options.config, ...runnerConfig });

  const planned = plannedTrajectories(benchmark.problems, k, existing);
  const doneKeys = new Set(
    planned.map((trajectory) => pairKey(trajectory.problemId as string, trajectory.sample)),
  );
  const queue: { problem: BenchmarkProblem; sample: number; regrade?: Trajectory }[] = [];
  // Trajectories saved without a verdict (the grader was down) are graded again, not solved again.
  const byId = new Map(benchmark.problems.map((problem) => [problem.id, problem]));
  for (const trajectory of planned) {
    const problem = byId.get(trajectory.problemId as string);
    if (problem !== undefined && !hasVerdict(readGrade(trajectory))) {
      queue.push({ problem, sample: trajectory.sample, regrade: trajectory });
    }
  }
  for (let sample = 0; sample < k; sample++) {
    for (const problem of benchmark.problems) {
      if (!doneKeys.has(pairKey(problem.id, sample))) queue.push({ problem, sample });
    }
  }

  const progress: EvalProgress = {
    done: planned.length,
    total: benchmark.problems.length * k,
    doneAtStart: planned.length,
    correct: planned.filter((trajectory) => readGrade(trajectory)?.correct === true).length,
    codeCalls: planned.reduce((total, trajectory) => total + trajectory.toolCalls.length, 0),
    running: 0,
    failed: 0,
    gradeUnavailable: planned.filter((trajectory) => !hasVerdict(readGrade(trajectory))).length,
  };
  onProgress?.({ ...progress });
  const maxConsecutiveErrors = options.maxConsecutiveErrors ?? Math.max(8, 2 * concurrency);
  let consecutiveErrors = 0;

  // One controller stops every worker: the caller's signal, or the first solver failure.
  const stop = new AbortController();
  const onAbort = () => stop.abort(signal?.reason);
  if (signal?.aborted) stop.abort(signal.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  let failure: { error: unknown } | null = null;
  let written = 0;
  const warn = options.onWarning === undefined ? {} : { onWarning: options.onWarning };
  // The writer validates each record, appends it with one write and syncs it.
  const writer = await openTrajectoryWriter(join(outDir, RUN_FILES.trajectories), warn);
  let errorWriter: Awaited<ReturnType<typeof openTrajectoryWriter>> | null = null;

  const worker = async () => {
    for (let next = queue.shift(); next !== undefined && !stop.signal.aborted; next = queue.shift()) {
      const { problem, sample, regrade } = next;
      progress.running++;
      try {
        if (regrade !== undefined) {
          const graded = attachGrade(regrade, await grade(regrade, problem), problem.answer);
          if (stop.signal.aborted || !hasVerdict(readGrade(graded))) continue;
          await writer.append(graded);
          written++;
          progress.gradeUnavailable--;
          if (readGrade(graded)?.correct) progress.correct++;
          continue;
        }
        const solved = await solve(problem, sample, stop.signal);
        if (stop.signal.aborted) continue; // in flight at the stop: not written, redone on resume
        const trajectory = { ...solved, problemId: problem.id, sample };
        if (trajectory.finish?.reason === 'error') {
          errorWriter ??= await openTrajectoryWriter(join(outDir, RUN_FILES.errors), warn);
          await errorWriter.append(trajectory);
          progress.failed++;
          if (++consecutiveErrors >= maxConsecutiveErrors && !stop.signal.aborted) {
            failure = { error: new EvalInfrastructureError(consecutiveErrors, trajectory.finish.error) };
            stop.abort(failure.error);
          }
          continue;
        }
        consecutiveErrors = 0;
        const graded = attachGrade(trajectory, await grade(trajectory, problem), problem.answer);
        if (stop.signal.aborted) continue;
        await writer.append(graded);
        written++;
        progress.done++;
        if (readGrade(graded)?.correct) progress.correct++;
        if (!hasVerdict(readGrade(graded))) progress.gradeUnavailable++;
        progress.codeCalls += graded.toolCalls.length;
      } catch (error) {
        if (!stop.signal.aborted) {
          failure = { error };
          stop.abort(error);
        }
      } finally {
        progress.running--;
        onProgress?.({ ...progress });
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(queue.length, 1)) }, worker));
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await writer.close();
    await (errorWriter as Awaited<ReturnType<typeof openTrajectoryWriter>> | null)?.close();
  }
  if (failure !== null) throw (failure as { error: unknown }).error;

  const all = await readRunTrajectories(outDir, warn);
  const summary = await summarizeRun({
    benchmark: benchmark.name,
    problems: benchmark.problems,
    k,
    trajectories: all,
    equivalent: options.equivalent,
  });
  await writeRunJson(outDir, RUN_FILES.summary, summary);
  const status = summary.complete ? 'completed' : stop.signal.aborted ? 'interrupted' : 'incomplete';
  return {
    status,
    summary,
    written,
    failed: progress.failed,
    done: summary.trajectories,
    total: summary.expectedTrajectories,
  };
}

async function prepareFolder(options: EvalRunOptions): Promise<Trajectory[]> {
  const { outDir, resume, benchmark } = options;
  if (!resume) {
    if (await folderHasEntries(outDir)) throw new EvalOutputExistsError(outDir);
    await mkdir(outDir, { recursive: true });
    return [];
  }
  await mkdir(outDir, { recursive: true });
  const saved = (await readRunJson(outDir, RUN_FILES.config)) as { benchmark?: unknown } | null;
  if (saved !== null && saved.benchmark !== benchmark.name) {
    throw new EvalResumeMismatchError(
      outDir,
      `it was run on benchmark "${String(saved.benchmark)}", not "${benchmark.name}"`,
    );
  }
  return readRunTrajectories(outDir, options.onWarning === undefined ? {} : { onWarning: options.onWarning });
}

function pairKey(problemId: string, sample: number): string {
  return `${problemId}\u0000${sample}`;
}
