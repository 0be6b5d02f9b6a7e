/**
 * `train sft`: supervised fine-tuning of any model on the trainer (`agentmath_train`, FSDP2;
 * one rank runs without torchrun), the byte model included. The story, stage by stage:
 *   model   the folder trained from; none given: a new byte model (`model init --arch
 *           byte-gpt --seed S`) in `DIR/init-model`;
 *   data    a data file, or arith solutions written into `DIR/data-<style>.jsonl` in the run's
 *           dialect (tool solutions' code really run in the jailed sandbox; resumable);
 *   train   each solution tokenized as the agent loop prompts the model (its chat template,
 *           the run's prompt builder and dialect), a seeded shuffle per epoch, warmup + cosine,
 *           `metrics.jsonl` a line per step, a sharded checkpoint every few steps;
 *   export  the model in Hugging Face layout in `DIR/model/`, with the prompt it was trained
 *           with (`training-prompt.json`);
 *   eval    held-out arith accuracy through the real agent loop on a local engine serving
 *           `DIR/model` (`DIR/held-out-eval/`, an `eval` run folder), unless `evalProblems` 0;
 *   report  `training-report.json` and `.md`.
 * Sizing: `steps` is the run's length; `maxMinutes` bounds this session's training time: after
 * `CALIBRATION_STEPS` steps the schedule is shortened to the steps that fit (never lengthened),
 * and a step that would start past the budget is not taken; the length is kept in
 * `schedule.json`. Resume (`resume`, also after kill -9) continues every stage where it
 * stopped: the newest committed checkpoint is loaded, metric lines of later steps are dropped
 * (they are redone); the configuration must match, except the fields that size or place the
 * run. One writer at a time (`run.lock`). A stop asked for by `signal` is a result
 * (`status: 'stopped'`), not an error.
 */
import { existsSync } from 'node:fs';
import { appendFile, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { promptBuilders } from '../agent/index.ts';
import { loadTokenizer } from '../engine/load-tokenizer.ts';
import { modelContextLength, startEmbeddedEngine } from '../engine/local/index.ts';
import { initHfModel, isModelInitFolder, readTrainingPrompt, writeTrainingPrompt } from '../model/index.ts';
import type { Dialect } from '../protocol/dialect.ts';
import { getDialect } from '../protocol/index.ts';
import { createLocalSandbox } from '../sandbox/index.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { readRunConfigFile } from '../shared/run-config-file.ts';
import { checkRunFolder as checkOutFolder, RUN_FOLDER_REFUSED } from '../shared/run-folder-check.ts';
import { acquireRunFolderLock } from '../shared/run-folder-lock.ts';
import { assertSameRun, type RunIdentity } from '../shared/run-identity.ts';
import {
  arithEvalProblems,
  solutionDialectIssue,
  taskSolutionSchema,
  writeArithSftDataset,
} from '../tasks/index.ts';
import { createSeededRandom } from '../tasks/seeded-random.ts';
import type { TaskSolution } from '../tasks/types.ts';
import { fitStepsToBudget } from './fit-steps-to-budget.ts';
import { evaluateHeldOut, type HeldOutEvalResult } from './held-out-eval.ts';
import { learningRateAt } from './learning-rate-schedule.ts';
import { safetensorsParameterCount } from './rl-learning-rate.ts';
import { type ResolvedSftConfig, resolveSftDefaults, type SftConfig } from './sft-config.ts';
import { readSftDataFile } from './sft-data-file.ts';
import { buildSftExample, type SftExample } from './sft-example.ts';
import type { SftMetrics } from './sft-metrics.ts';
import { startTrainerService, type TrainerService } from './trainer-service.ts';
import { type TrainingReport, writeTrainingReport } from './training-report.ts';

export type SftEvent =
  | { type: 'sft-start'; dir: string; config: ResolvedSftConfig; resumed: boolean }
  | { type: 'model-initialised'; path: string; parameters: number }
  | { type: 'data-progress'; done: number; total: number }
  | { type: 'data-ready'; examples: number; droppedTooLong: number; meanTokens: number }
  | { type: 'trainer-ready'; url: string; worldSize: number; parameters: number; device: string }
  | { type: 'resumed'; step: number; checkpoint: string }
  | { type: 'schedule'; totalSteps: number; reason: 'steps' | 'minutes' | 'resume' }
  | ({ type: 'train-step'; totalSteps: number; trainWallMs: number; etaMs: number } & SftMetrics)
  | { type: 'checkpoint-saved'; step: number; path: string }
  | { type: 'model-exported'; path: string }
  | { type: 'eval-progress'; done: number; total: number; correct: number }
  | { type: 'sft-finish'; report: TrainingReport };

/** The run could not start: the folder, the model or the data is not what it must be. */
export class SftRunError extends AgentMathError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

export type SftRunOptions = {
  /** The run folder. */
  out: string;
  config: SftConfig;
  resume?: boolean;
  onEvent?: (event: SftEvent) => void;
  onTrainerLog?: (line: string) => void;
  /** Aborting stops after the current step (a checkpoint is saved); the run can be resumed. */
  signal?: AbortSignal;
};

/** How a run ended: the model trained (and evaluated), or stopped by `signal` after a checkpoint. */
export type SftResult =
  | { status: 'finished'; steps: number; finalLoss: number | null; model: string; report: TrainingReport }
  | { status: 'stopped'; step: number; totalSteps: number; checkpoint: string };

const CONFIG_FILE = 'config.json';
const METRICS_FILE = 'metrics.jsonl';
const SCHEDULE_FILE = 'schedule.json';
/** Where a run without `model` initialises its byte model. */
export const INIT_MODEL_FOLDER = 'init-model';
/** The exported model's folder in a run. */
export const SFT_MODEL_FOLDER = 'model';
/** The held-out evaluation's run folder (an `eval` run folder). */
export const SFT_EVAL_DIR = 'held-out-eval';
/** Steps timed before `maxMinutes` fixes the schedule. */
export const CALIBRATION_STEPS = 2;
/**
 * Config fields that size a run or place its work rather than define it: a resume may change
 * them (how many ranks and threads split the work changes no number a step computes beyond rounding).
 */
const SIZING_FIELDS = ['steps', 'maxMinutes', 'sequenceParallel', 'cpuOffload', 'threads'] as const;

/** Runs (or resumes) SFT; resolves when the model is exported and evaluated, or when `signal` stopped it. */
export async function runSft({
  out,
  config,
  resume = false,
  onEvent = () => {},
  onTrainerLog,
  signal,
}: SftRunOptions): Promise<SftResult> {
  const started = Date.now();
  const loadAverageStart = loadavg()[0] ?? 0;
  const dir = resolve(out);
  await checkRunFolder(dir, resume);
  const releaseLock = await acquireRunFolderLock(dir, { command: 'train sft' });
  try {
    await checkRunFolder(dir, resume);
    const model = await modelStage(dir, config, onEvent);
    const facts = await modelFacts(model);
    const resolved = resolveSftDefaults(config, facts);
    const dataStarted = Date.now();
    const prepare = async () =>
      tokenize(resolved, await dataStage(dir, resolved, onEvent), facts.contextTokens, onEvent);
    // A data file is read and checked before the folder gets its config.json, so a bad --data
    // leaves no run; generated data is written into the run folder, after its config.
    const fromFile = resolved.data === null ? null : await prepare();
    await commitIdentity(dir, resolved, resume);
    onEvent({ type: 'sft-start', dir, config: resolved, resumed: resume });
    const examples = fromFile ?? (await prepare());
    const dataWallMs = Date.now() - dataStarted;
    const trained = await train({
      dir,
      config: resolved,
      examples: examples.kept,
      resume,
      onEvent,
      onTrainerLog,
      signal,
    });
    if (trained.status === 'stopped') return trained;
    const modelDir = join(dir, SFT_MODEL_FOLDER);
    await writeTrainingPrompt(modelDir, { prompt: resolved.prompt, dialect: resolved.dialect });
    const evaluation = await evalStage(dir, modelDir, resolved, onEvent, signal);
    signal?.throwIfAborted();
    const history = await readMetrics(dir);
    const tokens = history.reduce((sum, line) => sum + line.tokensTotal, 0);
    const wallMs = history.reduce((sum, line) => sum + line.stepMs, 0);
    const { samples = [], ...evalFigures } = evaluation ?? {};
    const report: TrainingReport = {
      version: 2,
      createdAt: new Date().toISOString(),
      config: resolved,
      model: { folder: modelDir, from: resolved.model, parameters: safetensorsParameterCount(modelDir) },
      data: {
        examples: examples.kept.length,
        droppedTooLong: examples.dropped,
        meanTokens: examples.meanTokens,
        wallMs: dataWallMs,
      },
      training: {
        steps: history.length,
        tokens,
        trainedTokens: history.reduce((sum, line) => sum + line.tokens, 0),
        wallMs,
        tokensPerSecond: wallMs > 0 ? (1000 * tokens) / wallMs : 0,
        finalLoss: history.at(-1)?.loss ?? null,
        history: history.map(({ step, loss, learningRate }) => ({ step, loss, learningRate })),
      },
      eval: evaluation === null ? null : (evalFigures as Omit<HeldOutEvalResult, 'samples'>),
      samples,
      machine: { cpus: cpus().length, loadAverageStart, loadAverageEnd: loadavg()[0] ?? 0 },
      totalWallMs: Date.now() - started,
    };
    await writeTrainingReport(dir, report);
    onEvent({ type: 'sft-finish', report });
    return {
      status: 'finished',
      steps: history.length,
      finalLoss: report.training.finalLoss,
      model: modelDir,
      report,
    };
  } finally {
    await releaseLock();
  }
}

/** The model trained from: the one given, or a new byte model in `DIR/init-model` (made once). */
async function modelStage(
  dir: string,
  config: SftConfig,
  onEvent: (event: SftEvent) => void,
): Promise<string> {
  if (config.model !== null) {
    const model = resolve(config.model);
    if (!existsSync(join(model, 'config.json'))) {
      throw new SftRunError(
        RUN_FOLDER_REFUSED,
        `--model ${config.model}: not a model folder (no config.json)`,
      );
    }
    return model;
  }
  const folder = join(dir, INIT_MODEL_FOLDER);
  if (!existsSync(join(folder, 'config.json'))) {
    const result = await initHfModel({ arch: 'byte-gpt', out: folder, seed: config.seed });
    onEvent({ type: 'model-initialised', path: folder, parameters: result.parameters });
  }
  return folder;
}

async function modelFacts(folder: string) {
  const contextTokens = modelContextLength(folder);
  if (contextTokens === null) {
    throw new SftRunError(
      RUN_FOLDER_REFUSED,
      `${join(folder, 'config.json')}: no max_position_embeddings (the context length)`,
    );
  }
  return {
    folder,
    fromScratch: isModelInitFolder(folder),
    contextTokens,
    declared: await readTrainingPrompt(folder),
  };
}

/** The configuration a resume must match: everything but the sizing and placement fields. */
function runIdentity(config: ResolvedSftConfig): RunIdentity {
  const identity: Record<string, unknown> = {
    ...config,
    data: config.data === null ? null : resolve(config.data),
    // Runs saved before level weights existed drew every level once a turn.
    levelWeights: config.levelWeights ?? null,
  };
  for (const field of SIZING_FIELDS) delete identity[field];
  return identity as RunIdentity;
}

/** Writes `config.json` for a new run; a resume must match the saved one (a change is refused). */
async function commitIdentity(dir: string, config: ResolvedSftConfig, resume: boolean): Promise<void> {
  const path = join(dir, CONFIG_FILE);
  if (!resume) {
    await writeFile(path, `${JSON.stringify(config, null, 2)}\n`);
    return;
  }
  const saved = (await readRunConfigFile(path)) as unknown as ResolvedSftConfig;
  assertSameRun({
    run: dir,
    saved: runIdentity(saved),
    current: runIdentity(config),
    fresh: 'start a new run with another --out (without --resume)',
  });
}

/**
 * Refuses, without writing, a folder that is not this run (`RUN_FOLDER_REFUSED`, the shared
 * rule): another run without `resume`, no run to resume, a folder of other files. The new byte
 * model a run writes before its config.json does not make a folder "other files".
 */
async function checkRunFolder(dir: string, resume: boolean): Promise<void> {
  checkOutFolder({
    folder: dir,
    marker: CONFIG_FILE,
    resume,
    command: 'train sft',
    leftovers: [INIT_MODEL_FOLDER],
  });
}

/** The solutions trained on: the data file's, or arith solutions written (and resumed) into the run. */
async function dataStage(
  dir: string,
  config: ResolvedSftConfig,
  onEvent: (event: SftEvent) => void,
): Promise<TaskSolution[]> {
  const dialect = getDialect(config.dialect);
  if (config.data !== null) {
    const solutions = await readSftDataFile(config.data, { maskToolOutput: config.maskToolOutput });
    assertDialect(config.data, solutions, dialect);
    onEvent({ type: 'data-progress', done: solutions.length, total: solutions.length });
    return solutions;
  }
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
    if (done % 500 === 0 || done === total) onEvent({ type: 'data-progress', done, total });
  };
  const common = {
    count: config.trainProblems,
    seed: config.seed,
    levels: config.levels,
    ...(config.levelWeights === null ? {} : { levelWeights: config.levelWeights }),
    dialect,
    onProgress,
  };
  const writeTool = async (path: string) => {
    const sandbox = createLocalSandbox({ maxWorkers: 2, warmWorkers: 0, preload: [] });
    try {
      await writeArithSftDataset({ ...common, out: path, style: 'tool', sandbox, concurrency: 2 });
    } finally {
      await sandbox.close();
    }
  };
  const out = join(dir, `data-${config.style}.jsonl`);
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
  solutions.sort((a, b) => (a.problem.id < b.problem.id ? -1 : a.problem.id > b.problem.id ? 1 : 0));
  if (!config.maskToolOutput) {
    solutions = solutions.map((solution) => ({
      ...solution,
      segments: solution.segments.map((segment) => ({ ...segment, kind: 'model' as const })),
    }));
  }
  return solutions;
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

/** Refuses data whose code blocks are in another dialect's markup, naming the first such record. */
function assertDialect(file: string, solutions: readonly TaskSolution[], dialect: Dialect): void {
  for (const [index, solution] of solutions.entries()) {
    const issue = solutionDialectIssue(solution, dialect);
    if (issue !== null) {
      throw new SftRunError(
        RUN_FOLDER_REFUSED,
        `${file} record ${index + 1} (${solution.problem.id}): ${issue}. The run trains the ${dialect.name} ` +
          `dialect (--dialect); give data written in it (tasks write-arith --style tool --dialect ${dialect.name})`,
      );
    }
  }
}

/** Each solution as the agent loop prompts the model; longer than `maxSequenceTokens`: left out. */
async function tokenize(
  config: ResolvedSftConfig,
  solutions: readonly TaskSolution[],
  contextTokens: number,
  onEvent: (event: SftEvent) => void,
): Promise<{ kept: SftExample[]; dropped: number; meanTokens: number }> {
  const tokenizer = await loadTokenizer(config.model);
  const dialect = getDialect(config.dialect);
  const prompt = promptBuilders[config.prompt];
  const kept: SftExample[] = [];
  let dropped = 0;
  for (const solution of solutions) {
    const example = buildSftExample(solution, tokenizer, dialect, prompt);
    if (example.inputIds.length > config.maxSequenceTokens) dropped++;
    else kept.push(example);
  }
  if (kept.length === 0) {
    // The data did not fit, not the command line: the work failed (exit 1), naming the limit.
    const limit =
      config.maxSequenceTokens === contextTokens
        ? `the model's context of ${contextTokens} tokens`
        : `--max-sequence-tokens ${config.maxSequenceTokens}`;
    throw new SftRunError(
      'SFT_NO_EXAMPLE',
      `${config.data ?? 'the generated solutions'}: no example fits ${limit} (${solutions.length} solutions read)`,
    );
  }
  const meanTokens = kept.reduce((sum, example) => sum + example.inputIds.length, 0) / kept.length;
  onEvent({ type: 'data-ready', examples: kept.length, droppedTooLong: dropped, meanTokens });
  return { kept, dropped, meanTokens };
}

async function train({
  dir,
  config,
  examples,
  resume,
  onEvent,
  onTrainerLog,
  signal,
}: {
  dir: string;
  config: ResolvedSftConfig;
  examples: SftExample[];
  resume: boolean;
  onEvent: (event: SftEvent) => void;
  onTrainerLog: ((line: string) => void) | undefined;
  signal: AbortSignal | undefined;
}): Promise<{ status: 'trained' } | Extract<SftResult, { status: 'stopped' }>> {
  const modelDir = join(dir, SFT_MODEL_FOLDER);
  const done = await readMetrics(dir);
  let totalSteps = await initialTotalSteps(dir, config, resume);
  if (resume && existsSync(join(modelDir, 'config.json')) && done.length >= totalSteps)
    return { status: 'trained' };
  const checkpoint = resume ? await newestCheckpoint(dir) : null;
  const startStep = checkpoint?.step ?? 0;
  if (resume) await keepMetricsUpTo(dir, startStep);
  await writeSchedule(dir, config.steps, totalSteps);
  onEvent({ type: 'schedule', totalSteps, reason: resume ? 'resume' : 'steps' });

  const service: TrainerService = await startTrainerService({
    model: config.model,
    processes: config.processes,
    threads: config.threads,
    microBatchTokens: config.microBatchTokens,
    activationCheckpointing: config.activationCheckpointing,
    sequenceParallel: config.sequenceParallel,
    cpuOffload: config.cpuOffload,
    seed: config.seed,
    ...(onTrainerLog ? { onLog: onTrainerLog } : {}),
    ...(signal === undefined ? {} : { signal }),
  });
  try {
    const state = await service.client.state();
    onEvent({
      type: 'trainer-ready',
      url: service.url,
      worldSize: state.worldSize,
      parameters: state.parameters,
      device: state.device,
    });
    if (checkpoint !== null) {
      await service.client.loadCheckpoint(checkpoint.path);
      onEvent({ type: 'resumed', step: checkpoint.step, checkpoint: checkpoint.path });
    }
    const budgetMs = config.maxMinutes === null ? Number.POSITIVE_INFINITY : config.maxMinutes * 60_000;
    let sessionMs = 0;
    for (let step = startStep; step < totalSteps; step++) {
      const schedule = {
        peak: config.learningRate,
        warmupSteps: config.warmupSteps,
        totalSteps,
        minRatio: config.minLearningRateRatio,
      };
      const batch = batchOfStep(examples, step, config.batchSize, config.seed);
      const started = performance.now();
      const result = await service.client.sftStep({
        sequences: batch,
        learningRate: learningRateAt(step, schedule),
      });
      const stepMs = performance.now() - started;
      sessionMs += stepMs;
      if (config.maxMinutes !== null) {
        const fitted = fitStepsToBudget({
          stepsDone: step + 1,
          startStep,
          totalSteps,
          sessionMs,
          budgetMs,
          calibrationSteps: CALIBRATION_STEPS,
        });
        if (fitted !== totalSteps) {
          totalSteps = fitted;
          await writeSchedule(dir, config.steps, totalSteps);
          onEvent({ type: 'schedule', totalSteps, reason: 'minutes' });
        }
      }
      const tokensTotal = batch.reduce((sum, example) => sum + example.inputIds.length, 0);
      const metrics: SftMetrics = {
        step: step + 1,
        loss: result.loss,
        tokens: result.tokens,
        tokensPerSecond: (1000 * result.tokens) / stepMs,
        tokensTrained: result.tokens,
        tokensTotal,
        learningRate: result.learningRate,
        gradNorm: result.gradNorm,
        stepMs: Math.round(stepMs),
        computeMs: Math.round(result.stepMs),
        tokensTotalPerSecond: (1000 * tokensTotal) / stepMs,
        skipped: result.skipped,
      };
      await appendFile(join(dir, METRICS_FILE), `${JSON.stringify(metrics)}\n`);
      const stepsThisSession = step + 1 - startStep;
      onEvent({
        type: 'train-step',
        totalSteps,
        trainWallMs: sessionMs,
        etaMs: (sessionMs / stepsThisSession) * (totalSteps - step - 1),
        ...metrics,
      });
      const last = step + 1 === totalSteps;
      const stopping = signal?.aborted === true;
      if (last || stopping || (step + 1) % config.checkpointEvery === 0) {
        const path = join(dir, 'checkpoints', `step-${String(step + 1).padStart(6, '0')}`);
        await service.client.saveCheckpoint(path);
        await pruneCheckpoints(dir, path);
        onEvent({ type: 'checkpoint-saved', step: step + 1, path });
        if (stopping && !last) return { status: 'stopped', step: step + 1, totalSteps, checkpoint: path };
      }
    }
    await service.client.exportModel(modelDir);
    onEvent({ type: 'model-exported', path: modelDir });
    return { status: 'trained' };
  } finally {
    await service.stop();
  }
}

/** Held-out accuracy of the exported model on a local engine (resumes an interrupted evaluation). */
async function evalStage(
  dir: string,
  modelDir: string,
  config: ResolvedSftConfig,
  onEvent: (event: SftEvent) => void,
  signal: AbortSignal | undefined,
): Promise<HeldOutEvalResult | null> {
  if (config.evalProblems === 0) return null;
  const engine = await startEmbeddedEngine({ model: modelDir, maxConcurrency: config.evalConcurrency });
  try {
    return await evaluateHeldOut({
      engineUrl: engine.worker.url,
      tokenizer: engine.tokenizer,
      problems: arithEvalProblems({ count: config.evalProblems, levels: config.levels }),
      contextTokens: engine.contextTokens ?? config.maxSequenceTokens,
      prompt: promptBuilders[config.prompt],
      dialect: getDialect(config.dialect),
      outDir: join(dir, SFT_EVAL_DIR),
      concurrency: config.evalConcurrency,
      maxToolCalls: config.evalMaxToolCalls,
      onProgress: (done, total, correct) => onEvent({ type: 'eval-progress', done, total, correct }),
      ...(signal ? { signal } : {}),
    });
  } finally {
    await engine.close();
  }
}

/**
 * The schedule's length at the start of a session: `steps` for a new run; on resume, the saved
 * length unless `steps` or `maxMinutes` asks for a new one (the flags were given again).
 */
async function initialTotalSteps(dir: string, config: ResolvedSftConfig, resume: boolean): Promise<number> {
  if (!resume) return config.steps;
  const path = join(dir, SCHEDULE_FILE);
  const saved = existsSync(path)
    ? (JSON.parse(await readFile(path, 'utf8')) as { totalSteps?: unknown; steps?: unknown })
    : {};
  if (typeof saved.totalSteps !== 'number' || saved.steps !== config.steps || config.maxMinutes !== null) {
    return config.steps;
  }
  return saved.totalSteps;
}

/** `schedule.json`: the steps asked for and the schedule's length (shorter when a time budget fit it). */
async function writeSchedule(dir: string, steps: number, totalSteps: number): Promise<void> {
  await writeFile(join(dir, SCHEDULE_FILE), `${JSON.stringify({ steps, totalSteps })}\n`);
}

/** The steps a run asked for, from its schedule.json (or its config.json), or null. */
export async function savedRunSteps(dir: string): Promise<number | null> {
  for (const name of [SCHEDULE_FILE, CONFIG_FILE]) {
    const path = join(dir, name);
    if (!existsSync(path)) continue;
    const steps = (JSON.parse(await readFile(path, 'utf8')) as { steps?: unknown }).steps;
    if (typeof steps === 'number') return steps;
  }
  return null;
}

/** The examples of 0-based `step`: epoch e is a seeded shuffle, batches are consecutive slices. */
export function batchOfStep<T>(examples: readonly T[], step: number, batchSize: number, seed: number): T[] {
  const batch: T[] = [];
  for (let slot = 0; slot < batchSize; slot++) {
    const position = step * batchSize + slot;
    const epoch = Math.floor(position / examples.length);
    const order = epochOrder(examples.length, epoch, seed);
    const example = examples[order[position % examples.length] ?? 0];
    if (example !== undefined) batch.push(example);
  }
  return batch;
}

const orders = new Map<string, number[]>();
function epochOrder(count: number, epoch: number, seed: number): number[] {
  const key = `${count}:${epoch}:${seed}`;
  let order = orders.get(key);
  if (order === undefined) {
    const random = createSeededRandom(`sft-order:${seed}:${epoch}`);
    order = Array.from({ length: count }, (_, index) => index);
    for (let index = count - 1; index > 0; index--) {
      const other = Math.floor(random() * (index + 1));
      [order[index], order[other]] = [order[other] as number, order[index] as number];
    }
    if (orders.size > 8) orders.clear();
    orders.set(key, order);
  }
  return order;
}

/** The newest checkpoint whose `trainer-state.json` exists (an interrupted save has none). */
async function newestCheckpoint(dir: string): Promise<{ step: number; path: string } | null> {
  const folder = join(dir, 'checkpoints');
  if (!existsSync(folder)) return null;
  const steps = (await readdir(folder))
    .map((name) => /^step-(\d+)$/.exec(name))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => ({ step: Number(match[1]), path: join(folder, match[0]) }))
    .filter((candidate) => existsSync(join(candidate.path, 'trainer-state.json')))
    .sort((a, b) => b.step - a.step);
  return steps[0] ?? null;
}

/** Keeps the newest committed checkpoint and the one just written; removes older ones. */
async function pruneCheckpoints(dir: string, keep: string): Promise<void> {
  const folder = join(dir, 'checkpoints');
  for (const name of await readdir(folder)) {
    const path = join(folder, name);
    if (path !== keep) await rm(path, { recursive: true, force: true });
  }
}

/** The run's metric lines (a line cut by kill -9 is left out). */
export async function readMetrics(dir: string): Promise<SftMetrics[]> {
  const path = join(dir, METRICS_FILE);
  if (!existsSync(path)) return [];
  const lines: SftMetrics[] = [];
  for (const line of (await readFile(path, 'utf8')).split('\n')) {
    if (line.trim() === '') continue;
    try {
      lines.push(JSON.parse(line) as SftMetrics);
    } catch {
      // a line cut by kill -9: its step is redone
    }
  }
  return lines;
}

/** After a crash, metric lines past the checkpoint belong to steps that will be redone. */
async function keepMetricsUpTo(dir: string, step: number): Promise<void> {
  const path = join(dir, METRICS_FILE);
  if (!existsSync(path)) return;
  const kept = (await readMetrics(dir)).filter((line) => line.step <= step);
  await writeFile(path, kept.map((line) => `${JSON.stringify(line)}\n`).join(''));
}
