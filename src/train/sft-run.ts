/**
 * An SFT run of the embedded model on a task family, end to end: write the dataset (tool
 * solutions run their code in the jailed sandbox), tokenize it, start the PyTorch worker on a
 * fresh preset, train with warmup + cosine through `/train/sft_step`, checkpoint every few
 * steps (resumable: same data order, step counter, optimizer state), save the final model into
 * the run folder, then measure held-out accuracy through the agent loop and write the report.
 *
 * Run folder layout: `data-<style>.jsonl` (the dataset), `checkpoints/step-N/` (the latest
 * checkpoint), `sft-state.json`, the model files (config.json, pytorch_model.bin, tokenizer
 * files: a folder the worker and `solve` can serve), `training-report.json` and `.md`.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { createByteLevelTokenizer } from '../engine/index.ts';
import { startEmbeddedWorker } from '../engine/local/index.ts';
import { getDialect } from '../protocol/index.ts';
import { createLocalSandbox } from '../sandbox/index.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { arithEvalProblems, taskSolutionSchema, writeArithSftDataset } from '../tasks/index.ts';
import type { TaskSolution } from '../tasks/types.ts';
import { evaluateHeldOut } from './held-out-eval.ts';
import { learningRateAt } from './learning-rate-schedule.ts';
import { planSftBatches } from './sft-batch-plan.ts';
import { resolveSftConfig, type SftConfig, type SftConfigInput } from './sft-config.ts';
import { readSftDataFile } from './sft-data-file.ts';
import { buildSftExample, type SftExample } from './sft-example.ts';
import { readSftState, type SftState, writeSftState } from './sft-state.ts';
import { TrainerClient } from './trainer-client.ts';
import { type TrainingReport, writeTrainingReport } from './training-report.ts';

/** Progress of a run, for a progress bar or a log. */
export type SftEvent =
  | { type: 'sft-start'; config: SftConfig; dir: string; resumedFromStep: number | null }
  | { type: 'data-progress'; done: number; total: number }
  | { type: 'data-ready'; examples: number; droppedTooLong: number; meanTokens: number }
  | { type: 'worker-ready'; url: string; parameters: number | null; contextLength: number }
  | {
      type: 'train-step';
      step: number;
      totalSteps: number;
      loss: number;
      learningRate: number;
      tokensPerSecond: number;
      trainWallMs: number;
      etaMs: number;
    }
  | { type: 'checkpoint-saved'; step: number; path: string }
  | { type: 'eval-progress'; done: number; total: number; correct: number }
  | { type: 'sft-finish'; report: TrainingReport }
  | { type: 'sft-interrupted'; step: number; checkpoint: string };

export type SftRunOptions = {
  /** The run folder (the final model is written here). */
  dir: string;
  config?: SftConfigInput;
  /** Continue from the last checkpoint in `dir` with the saved configuration. */
  resume?: boolean;
  onEvent?: (event: SftEvent) => void;
  /** Aborting stops after the current step, saves a checkpoint and rejects with `SftInterruptedError`. */
  signal?: AbortSignal;
  /** Receives the worker's log lines. */
  workerLog?: (line: string) => void;
  /** HTTP client for the trainer routes (default the global fetch): a proxy, or a recorder. */
  trainerFetch?: typeof fetch;
};

/** A run folder already holds a run (and `--resume` was not given), or holds none to resume. */
export class SftRunFolderError extends AgentMathError {
  constructor(message: string) {
    super('SFT_RUN_FOLDER', message);
  }
}

/** The run stopped on request after saving a checkpoint; `--resume` continues it. */
export class SftInterruptedError extends AgentMathError {
  constructor(dir: string, step: number) {
    super('SFT_INTERRUPTED', `training stopped at step ${step}; continue with --resume --out ${dir}`);
  }
}

/**
 * Steps measured before a `maxMinutes` run fixes the schedule's length: enough that one slow
 * step on a shared machine does not shorten the whole run.
 */
const CALIBRATION_STEPS = 50;

/** The held-out evaluation's run folder inside the model folder (an `eval` run folder). */
export const SFT_EVAL_DIR = 'held-out-eval';

/** Runs (or resumes) SFT in `dir` and returns the training report. */
export async function runSft(options: SftRunOptions): Promise<TrainingReport> {
  const started = Date.now();
  const loadAverageStart = loadavg()[0] ?? 0;
  const dir = resolve(options.dir);
  const emit = options.onEvent ?? (() => {});
  await mkdir(dir, { recursive: true });
  const saved = await readSftState(dir);
  if (options.resume && saved === null) {
    throw new SftRunFolderError(`${dir}: no sft-state.json to resume from; run without --resume to start`);
  }
  if (!options.resume && saved !== null) {
    throw new SftRunFolderError(
      `${dir} already holds an SFT run (step ${saved.step}); pass --resume to continue it or choose another --out`,
    );
  }
  const config = saved?.config ?? resolveSftConfig(options.config ?? {});
  emit({ type: 'sft-start', config, dir, resumedFromStep: saved?.step ?? null });

  const dataStarted = Date.now();
  const solutions = await prepareDataset(dir, config, emit);
  const worker = await startEmbeddedWorker({
    model: config.model,
    seed: config.seed,
    restart: false,
    ...(config.trainThreads > 0 ? { trainThreads: config.trainThreads } : {}),
    ...(options.workerLog ? { onLog: (line: string) => options.workerLog?.(line) } : {}),
  });
  try {
    const trainer = new TrainerClient({
      baseUrl: worker.url,
      ...(options.trainerFetch === undefined ? {} : { fetch: options.trainerFetch }),
    });
    const info = await trainer.modelInfo();
    emit({
      type: 'worker-ready',
      url: worker.url,
      parameters: info.parameters,
      contextLength: info.contextLength,
    });
    const tokenizer = createByteLevelTokenizer();
    const dialect = getDialect('tags');
    const all = solutions.map((solution) => buildSftExample(solution, tokenizer, dialect));
    const examples = all.filter((example) => example.inputIds.length <= info.contextLength);
    const meanTokens =
      examples.reduce((total, example) => total + example.inputIds.length, 0) / examples.length;
    emit({
      type: 'data-ready',
      examples: examples.length,
      droppedTooLong: all.length - examples.length,
      meanTokens,
    });
    const dataWallMs = Date.now() - dataStarted;

    let state: SftState = saved ?? {
      version: 1,
      config,
      step: 0,
      totalSteps: config.steps,
      tokens: 0,
      trainedTokens: 0,
      trainWallMs: 0,
      checkpoint: null,
      history: [],
    };
    if (state.checkpoint !== null) await trainer.loadCheckpoint(join(dir, state.checkpoint));
    state = await trainLoop({ dir, config, state, examples, trainer, emit, signal: options.signal });

    await trainer.saveCheckpoint(dir); // the final model: a folder `solve` and the worker serve
    const evaluation = await evaluateHeldOut({
      engineUrl: worker.url,
      problems: arithEvalProblems({ count: config.evalProblems, levels: config.levels }),
      contextTokens: info.contextLength,
      outDir: join(dir, SFT_EVAL_DIR),
      concurrency: config.evalConcurrency,
      maxToolCalls: config.evalMaxToolCalls,
      onProgress: (done, total, correct) => emit({ type: 'eval-progress', done, total, correct }),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const { samples, ...evalFigures } = evaluation;
    const report: TrainingReport = {
      version: 1,
      task: config.task,
      style: config.style,
      createdAt: new Date().toISOString(),
      config,
      model: { preset: config.model, parameters: info.parameters, shape: info.model },
      data: {
        examples: examples.length,
        droppedTooLong: all.length - examples.length,
        meanTokens,
        wallMs: dataWallMs,
      },
      training: {
        steps: state.step,
        tokens: state.tokens,
        trainedTokens: state.trainedTokens,
        wallMs: state.trainWallMs,
        tokensPerSecond: state.trainWallMs > 0 ? (1000 * state.tokens) / state.trainWallMs : 0,
        finalLoss: state.history.at(-1)?.loss ?? null,
        history: state.history,
      },
      eval: evalFigures,
      samples,
      machine: { cpus: cpus().length, loadAverageStart, loadAverageEnd: loadavg()[0] ?? 0 },
      totalWallMs: Date.now() - started,
    };
    await writeTrainingReport(dir, report);
    emit({ type: 'sft-finish', report });
    return report;
  } finally {
    await worker.stop();
  }
}

type LoopInput = {
  dir: string;
  config: SftConfig;
  state: SftState;
  examples: SftExample[];
  trainer: TrainerClient;
  emit: (event: SftEvent) => void;
  signal: AbortSignal | undefined;
};

/** The step loop: batch, learning rate, step, counters; a checkpoint every `checkpointEvery`. */
async function trainLoop({
  dir,
  config,
  state,
  examples,
  trainer,
  emit,
  signal,
}: LoopInput): Promise<SftState> {
  const plan = planSftBatches({ examples, batchSize: config.batchSize, seed: config.seed });
  let current = state;
  const budgetMs = config.maxMinutes === undefined ? Number.POSITIVE_INFINITY : config.maxMinutes * 60_000;
  while (current.step < current.totalSteps && current.trainWallMs < budgetMs) {
    if (signal?.aborted) {
      if (current.checkpoint !== checkpointFolder(current.step)) {
        current = await saveCheckpoint(dir, current, trainer, emit);
      }
      emit({ type: 'sft-interrupted', step: current.step, checkpoint: join(dir, current.checkpoint ?? '') });
      throw new SftInterruptedError(dir, current.step);
    }
    const batch = plan.batchAt(current.step);
    const learningRate = learningRateAt(current.step, {
      peak: config.learningRate,
      warmupSteps: config.warmupSteps,
      totalSteps: current.totalSteps,
      minRatio: config.minLearningRateRatio,
    });
    const stepStarted = performance.now();
    const result = await trainer.sftStep({
      sequences: batch.map(({ inputIds, lossMask }) => ({ inputIds, lossMask })),
      learningRate,
    });
    const stepMs = performance.now() - stepStarted;
    const step = current.step + 1;
    const tokens = current.tokens + batch.reduce((total, example) => total + example.inputIds.length, 0);
    const trainWallMs = current.trainWallMs + stepMs;
    let totalSteps = current.totalSteps;
    if (
      config.maxMinutes !== undefined &&
      step === CALIBRATION_STEPS &&
      current.totalSteps === config.steps
    ) {
      totalSteps = Math.max(step, Math.min(config.steps, Math.floor(budgetMs / (trainWallMs / step))));
    }
    const point = { step, loss: result.loss, learningRate };
    current = {
      ...current,
      step,
      totalSteps,
      tokens,
      trainedTokens: current.trainedTokens + result.tokens,
      trainWallMs,
      history: [...current.history, point],
    };
    emit({
      type: 'train-step',
      step,
      totalSteps,
      loss: result.loss,
      learningRate,
      tokensPerSecond: (1000 * tokens) / trainWallMs,
      trainWallMs,
      etaMs: (trainWallMs / step) * (totalSteps - step),
    });
    if (step % config.checkpointEvery === 0 || step === totalSteps) {
      current = await saveCheckpoint(dir, current, trainer, emit);
    }
  }
  // A time budget can end the loop between checkpoints.
  if (current.checkpoint !== checkpointFolder(current.step))
    current = await saveCheckpoint(dir, current, trainer, emit);
  return current;
}

const checkpointFolder = (step: number): string => `checkpoints/step-${step}`;

/**
 * Saves the worker's weights and optimizer, then the state pointing at them, then drops the
 * older checkpoint; returns the new state.
 */
async function saveCheckpoint(
  dir: string,
  state: SftState,
  trainer: TrainerClient,
  emit: (event: SftEvent) => void,
): Promise<SftState> {
  const relative = checkpointFolder(state.step);
  const previous = state.checkpoint;
  await trainer.saveCheckpoint(join(dir, relative));
  const next = { ...state, checkpoint: relative };
  await writeSftState(dir, next);
  if (previous !== null && previous !== relative)
    await rm(join(dir, previous), { recursive: true, force: true });
  emit({ type: 'checkpoint-saved', step: state.step, path: join(dir, relative) });
  return next;
}

/** Writes (or resumes writing) `DIR/data-<style>.jsonl` and reads its solutions back. */
async function prepareDataset(
  dir: string,
  config: SftConfig,
  emit: (event: SftEvent) => void,
): Promise<TaskSolution[]> {
  if (config.dataFile !== null) {
    const solutions = await readSftDataFile(config.dataFile, { maskToolOutput: config.maskToolOutput });
    emit({ type: 'data-progress', done: solutions.length, total: solutions.length });
    return solutions;
  }
  const out = join(dir, `data-${config.style}.jsonl`);
  const onProgress = ({
    resumed,
    written,
    skipped,
    total,
  }: {
    resumed: number;
    written: number;
    skipped: number;
    total: number;
  }) => {
    const done = resumed + written + skipped;
    if (done % 500 === 0 || done === total) emit({ type: 'data-progress', done, total });
  };
  const common = { count: config.trainProblems, seed: config.seed, levels: config.levels, onProgress };
  const writeTool = async (path: string) => {
    const sandbox = createLocalSandbox({ maxWorkers: 2, warmWorkers: 0, preload: [] });
    try {
      await writeArithSftDataset({ ...common, out: path, style: 'tool', sandbox, concurrency: 2 });
    } finally {
      await sandbox.close();
    }
  };
  if (config.style === 'text') await writeArithSftDataset({ ...common, out, style: 'text' });
  else await writeTool(out);
  let solutions = await readSolutions(out);
  if (config.style === 'text' && config.toolShare > 0) {
    const toolPath = join(dir, 'data-tool.jsonl');
    await writeTool(toolPath);
    const tool = new Map((await readSolutions(toolPath)).map((solution) => [solution.problem.id, solution]));
    solutions = solutions.map((solution) =>
      shareHash(solution.problem.id) < config.toolShare
        ? (tool.get(solution.problem.id) ?? solution)
        : solution,
    );
  }
  // Concurrent sessions append in completion order; the data order must not depend on it.
  return solutions.sort((a, b) => (a.problem.id < b.problem.id ? -1 : a.problem.id > b.problem.id ? 1 : 0));
}

async function readSolutions(path: string): Promise<TaskSolution[]> {
  const lines = (await readFile(path, 'utf8')).split('\n').filter((line) => line !== '');
  return lines.map((line) => taskSolutionSchema.parse(JSON.parse(line)));
}

/** A problem id's place in [0, 1), stable across runs (FNV-1a), to pick the tool-style share. */
function shareHash(id: string): number {
  let hash = 2166136261;
  for (const character of id) hash = Math.imul(hash ^ character.charCodeAt(0), 16777619);
  return (hash >>> 0) / 2 ** 32;
}
