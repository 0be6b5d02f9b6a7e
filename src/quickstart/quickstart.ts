/**
 * The quickstart: the main job on the embedded default. It trains the two embedded models
 * (tool-augmented and text-only SFT on the arith tasks) when no finished checkpoint exists,
 * then runs agentic RL (GRPO, `train rl`) from the tool model for a few minutes, serves each
 * model with its PyTorch worker, evaluates all three on the built-in `arith` benchmark through
 * the real agent loop and jailed sandbox, and writes one report: the side-by-side table and
 * the RL curves.
 *
 * The two SFT models train concurrently (one worker each, one core each on the 2-core default
 * machine); RL starts as soon as the tool model is ready, beside the text model's training;
 * the three evaluations run concurrently. Finished models are reused; an interrupted training
 * or RL run is resumed from its last checkpoint.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { BenchmarkProblem } from '../eval/benchmark-problem.ts';
import { escapeHtml } from '../eval/escape-html.ts';
import type { EvalProgress } from '../eval/eval-runner.ts';
import { type PairedDifference, pairedDifference } from '../eval/paired-difference.ts';
import { readRunTrajectories } from '../eval/run-folder.ts';
import { writeRunReport } from '../eval/run-report.ts';
import type { RunSummary } from '../eval/run-summary.ts';
import { readGrade } from '../eval/trajectory-grade.ts';
import { answersEquivalent } from '../grader/index.ts';
import { embeddedModelPaths } from '../model/index.ts';
import { createLocalSandbox } from '../sandbox/index.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import { arithBenchmark } from '../tasks/index.ts';
import {
  type RlConfigInput,
  type RlEvent,
  readRlRun,
  readSftState,
  readTrainingReport,
  resolveRlConfig,
  rlReportSections,
  runRl,
  runSft,
  type SftConfigInput,
  type SftEvent,
  TRAINING_REPORT_FILE,
  type TrainingReport,
} from '../train/index.ts';
import { evaluateOnArith, problemGrades } from './arith-evaluation.ts';
import { describeEffect } from './effect-sentence.ts';

export type QuickstartStyle = 'tool' | 'text' | 'tool-rl';

/** The two SFT models, trained side by side. */
export const QUICKSTART_STYLES: readonly ('tool' | 'text')[] = ['tool', 'text'];

/** The RL run's folder under `.agentmath/models/` (its `model/` is the policy evaluated). */
export const QUICKSTART_RL_FOLDER = 'arith-tool-rl';
/** Written into the RL folder when its run is over, so a later quickstart reuses it. */
const RL_DONE_FILE = 'quickstart-rl.json';

/**
 * The quickstart's RL run: from the tool model, on the levels where it still fails (3 and 4,
 * so groups carry a signal), small batches, stopped by its time budget.
 */
export const QUICKSTART_RL_DEFAULTS = {
  steps: 40,
  batchSize: 4,
  groupSize: 8,
  levels: [3, 4],
  problemPool: 400,
  evalEvery: 0,
  evalProblems: 40,
} as const satisfies Partial<RlConfigInput>;

export type QuickstartOptions = {
  /** The project folder whose `.agentmath/models/` holds the embedded models. */
  root: string;
  /** Where the two evaluation runs and report.html go. */
  outDir: string;
  /** Train again even when finished checkpoints exist. */
  retrain?: boolean;
  /** Problems of the arith benchmark evaluated (default: all of it). */
  benchmarkCount?: number;
  /** Trajectories in flight per model. */
  concurrency?: number;
  /** Cap on one training run's wall time, in minutes (default: the SFT defaults' step count). */
  trainMinutes?: number;
  /** Overrides of the SFT defaults for both models (tests use a tiny preset and a few steps). */
  sftConfig?: Omit<SftConfigInput, 'style'>;
  /** Minutes of RL from the tool model (default 3; 0 skips RL). */
  rlMinutes?: number;
  /** Overrides of the quickstart's RL configuration (tests use one tiny step). */
  rlConfig?: Partial<RlConfigInput>;
  signal?: AbortSignal;
  onEvent?: (event: QuickstartEvent) => void;
};

export type QuickstartEvent =
  | { type: 'model-cached'; style: QuickstartStyle; dir: string; report: TrainingReport }
  | { type: 'sft-event'; style: QuickstartStyle; event: SftEvent }
  | { type: 'rl-cached'; dir: string }
  | { type: 'rl-event'; event: RlEvent }
  | { type: 'eval-start'; style: QuickstartStyle; problems: number; outDir: string }
  | { type: 'eval-progress'; style: QuickstartStyle; progress: EvalProgress }
  | { type: 'eval-finish'; style: QuickstartStyle; summary: RunSummary };

/** Accuracy on the problems of one difficulty level. */
export type LevelResult = { level: number; problems: number; correct: number; accuracy: number };

export type QuickstartModelResult = {
  style: QuickstartStyle;
  modelDir: string;
  runDir: string;
  trainedNow: boolean;
  training: TrainingReport;
  summary: RunSummary;
  levels: LevelResult[];
};

export type QuickstartResult = {
  models: QuickstartModelResult[];
  /** RL's effect: the RL model against the tool model it started from, on the same problems. */
  rlEffect: PairedDifference | null;
  reportPath: string;
  wallMs: number;
};

/** Runs the whole quickstart; see the module header. */
export async function runQuickstart(options: QuickstartOptions): Promise<QuickstartResult> {
  const started = Date.now();
  const emit = options.onEvent ?? (() => {});
  const paths = embeddedModelPaths(options.root);
  const outDir = resolve(options.outDir);
  const concurrency = options.concurrency ?? 32;

  // RL starts from the tool model as soon as it is ready, beside the text model's training.
  const rlFolder = join(paths.models, QUICKSTART_RL_FOLDER);
  const toolReady = ensureModel('tool', paths.tool, options, emit);
  const textReady = ensureModel('text', paths.text, options, emit);
  const rlReady =
    (options.rlMinutes ?? 3) > 0
      ? toolReady.then(() => {
          options.signal?.throwIfAborted();
          return ensureRlModel(rlFolder, paths.tool, options, emit);
        })
      : Promise.resolve(null);
  const [toolTrained, textTrained, rl] = await Promise.all([toolReady, textReady, rlReady]);
  const trained = [toolTrained, textTrained];
  options.signal?.throwIfAborted();
  const evaluated: {
    style: QuickstartStyle;
    modelDir: string;
    report: TrainingReport;
    trainedNow: boolean;
  }[] = [
    ...QUICKSTART_STYLES.map((style, index) => ({
      style,
      modelDir: paths[style],
      report: trained[index]?.report as TrainingReport,
      trainedNow: trained[index]?.trainedNow ?? false,
    })),
    ...(rl === null
      ? []
      : [
          {
            style: 'tool-rl' as const,
            modelDir: join(rlFolder, 'model'),
            report: trained[0]?.report as TrainingReport,
            trainedNow: rl.trainedNow,
          },
        ]),
  ];

  const items = arithBenchmark(options.benchmarkCount === undefined ? {} : { count: options.benchmarkCount });
  const problems: BenchmarkProblem[] = items.map(({ id, problem, answer }) => ({ id, problem, answer }));
  const levelOf = new Map(items.map((item) => [item.id, item.level]));

  await mkdir(outDir, { recursive: true });
  const sandbox = createLocalSandbox({ maxWorkers: 2 * concurrency, warmWorkers: 4 });
  try {
    const summaries = await Promise.all(
      evaluated.map(({ style, modelDir }) =>
        evaluateModel(style, modelDir, join(outDir, style), problems, concurrency, sandbox, options, emit),
      ),
    );
    const models: QuickstartModelResult[] = [];
    for (const [index, model] of evaluated.entries()) {
      const runDir = join(outDir, model.style);
      models.push({
        style: model.style,
        modelDir: model.modelDir,
        runDir,
        trainedNow: model.trainedNow,
        training: model.report,
        summary: summaries[index] as RunSummary,
        levels: await levelResults(runDir, levelOf),
      });
    }
    const rlEffect =
      rl === null
        ? null
        : pairedDifference(
            await problemGrades(join(outDir, 'tool')),
            await problemGrades(join(outDir, 'tool-rl')),
          );
    const reportPath = await writeRunReport(
      evaluated.map(({ style }) => join(outDir, style)),
      {
        equivalent: (left, right) => answersEquivalent(left, right, { sandbox }),
        outFile: join(outDir, 'report.html'),
      },
    );
    if (rl !== null) {
      // One page: the evaluation table and charts, then the RL run's curves.
      const page = await readFile(reportPath, 'utf8');
      const effect = rlEffect === null ? '' : `<p>${escapeHtml(describeRlEffect(rlEffect))}</p>`;
      const curves = `<h2>Agentic RL from the tool model</h2>${effect}${rlReportSections([await readRlRun(rlFolder, 'tool + RL')])}`;
      await writeFile(reportPath, page.replace('</body>', `${curves}\n</body>`));
    }
    return { models, rlEffect, reportPath, wallMs: Date.now() - started };
  } finally {
    await sandbox.close();
  }
}

/** Reuses a finished model, resumes an interrupted run, or trains from scratch. */
async function ensureModel(
  style: 'tool' | 'text',
  dir: string,
  options: QuickstartOptions,
  emit: (event: QuickstartEvent) => void,
): Promise<{ report: TrainingReport; trainedNow: boolean }> {
  if (options.retrain) await rm(dir, { recursive: true, force: true });
  if (existsSync(join(dir, TRAINING_REPORT_FILE))) {
    const report = await readTrainingReport(dir);
    emit({ type: 'model-cached', style, dir, report });
    return { report, trainedNow: false };
  }
  const resume = (await readSftState(dir)) !== null;
  const report = await runSft({
    dir,
    resume,
    // The quickstart evaluates both models itself, on the whole benchmark, side by side.
    config: {
      ...options.sftConfig,
      style,
      evalProblems: 0,
      ...(options.trainMinutes === undefined ? {} : { maxMinutes: options.trainMinutes }),
    },
    onEvent: (event) => emit({ type: 'sft-event', style, event }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  return { report, trainedNow: true };
}

/** Reuses a finished RL run, resumes an interrupted one, or runs RL from the tool model. */
async function ensureRlModel(
  folder: string,
  init: string,
  options: QuickstartOptions,
  emit: (event: QuickstartEvent) => void,
): Promise<{ trainedNow: boolean }> {
  if (options.retrain) await rm(folder, { recursive: true, force: true });
  if (existsSync(join(folder, RL_DONE_FILE)) && existsSync(join(folder, 'model', 'config.json'))) {
    emit({ type: 'rl-cached', dir: folder });
    return { trainedNow: false };
  }
  const config = resolveRlConfig({ ...QUICKSTART_RL_DEFAULTS, ...options.rlConfig, init });
  const metrics = await runRl({
    folder,
    config,
    resume: existsSync(join(folder, 'checkpoint.json')),
    minutes: options.rlMinutes ?? 3,
    onEvent: (event) => emit({ type: 'rl-event', event }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  options.signal?.throwIfAborted();
  await writeFile(
    join(folder, RL_DONE_FILE),
    `${JSON.stringify({ steps: metrics.length, finishedAt: new Date().toISOString() })}\n`,
  );
  return { trainedNow: true };
}

/** One model's evaluation on the benchmark: greedy, problem-only prompt, tags dialect. */
async function evaluateModel(
  style: QuickstartStyle,
  modelDir: string,
  runDir: string,
  problems: readonly BenchmarkProblem[],
  concurrency: number,
  sandbox: SandboxProvider,
  options: QuickstartOptions,
  emit: (event: QuickstartEvent) => void,
): Promise<RunSummary> {
  // Each quickstart evaluates afresh: the folder is the quickstart's own output.
  await rm(runDir, { recursive: true, force: true });
  emit({ type: 'eval-start', style, problems: problems.length, outDir: runDir });
  const { summary } = await evaluateOnArith({
    modelDir,
    runDir,
    problems,
    concurrency,
    sandbox,
    dialect: 'tags',
    prompt: 'problem-only',
    maxToolCalls: 4,
    resume: false,
    config: { command: 'quickstart', style },
    meta: { style },
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    onProgress: (progress) => emit({ type: 'eval-progress', style, progress }),
  });
  emit({ type: 'eval-finish', style, summary });
  return summary;
}

/**
 * One sentence on what RL changed: the difference against the tool model on the same problems,
 * its noise, and whether that is a measured gain or within the noise.
 */
export function describeRlEffect(effect: PairedDifference): string {
  return describeEffect(effect, { comparison: 'RL against the tool model it started from', change: 'RL' });
}

/** Accuracy by difficulty level, from the graded trajectories of a run folder. */
async function levelResults(runDir: string, levelOf: ReadonlyMap<string, number>): Promise<LevelResult[]> {
  const byLevel = new Map<number, { problems: number; correct: number }>();
  for (const trajectory of await readRunTrajectories(runDir)) {
    const level = trajectory.problemId === null ? undefined : levelOf.get(trajectory.problemId);
    if (level === undefined) continue;
    const entry = byLevel.get(level) ?? { problems: 0, correct: 0 };
    entry.problems++;
    if (readGrade(trajectory)?.correct) entry.correct++;
    byLevel.set(level, entry);
  }
  return [...byLevel.entries()]
    .sort(([left], [right]) => left - right)
    .map(([level, { problems, correct }]) => ({
      level,
      problems,
      correct,
      accuracy: problems === 0 ? 0 : correct / problems,
    }));
}
