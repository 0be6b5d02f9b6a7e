/**
 * `train sft --model HF_DIR`: supervised fine-tuning of a Hugging Face causal LM on the
 * distributed trainer (FSDP2 under torchrun, `--nproc` processes on this machine).
 *
 * The story: read the data file (any record the project writes; its code blocks must be in the
 * run's dialect) → tokenize each solution with the model's own tokenizer and chat template
 * through the agent loop's prompt builder and `renderPrompt` (so training sees the prompt ids
 * inference will) → start the trainer → for each step, the step's batch (a seeded shuffle per
 * epoch, so a resumed run draws the same batches) and the learning rate of warmup + cosine →
 * `metrics.jsonl` → a sharded checkpoint every few steps → at the end, the model in Hugging
 * Face layout in `DIR/model/`.
 * Sizing: `steps` is the run's length; `maxMinutes` bounds this session's training time: after
 * `CALIBRATION_STEPS` steps the schedule is shortened to the steps that fit (never lengthened),
 * and a step that would start past the budget is not taken. The schedule's length is kept in
 * `schedule.json`.
 * Resume (`--resume`, also after kill -9) loads the newest committed checkpoint, drops metric
 * lines of steps after it (they are redone), and continues; the configuration must match,
 * except `steps` and `maxMinutes`, which a resume may change (the cosine is then recomputed
 * over the new length from the step reached). One writer at a time (`run.lock`); `config.json`
 * is written only after the inputs were read; a stop asked for by `signal` is a result
 * (`status: 'stopped'`), not an error.
 * Not covered: sequence parallelism; sequences longer than the micro-batch budget go alone.
 */
import { existsSync } from 'node:fs';
import { appendFile, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type PromptBuilderName, promptBuilders } from '../agent/index.ts';
import { loadTokenizer } from '../engine/load-tokenizer.ts';
import { modelContextLength } from '../engine/local/index.ts';
import type { Dialect } from '../protocol/dialect.ts';
import { getDialect } from '../protocol/index.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { readRunConfigFile } from '../shared/run-config-file.ts';
import { checkRunFolder as checkOutFolder } from '../shared/run-folder-check.ts';
import { acquireRunFolderLock } from '../shared/run-folder-lock.ts';
import { assertSameRun, type RunIdentity } from '../shared/run-identity.ts';
import { solutionDialectIssue } from '../tasks/index.ts';
import { createSeededRandom } from '../tasks/seeded-random.ts';
import type { TaskSolution } from '../tasks/types.ts';
import { fitStepsToBudget } from './fit-steps-to-budget.ts';
import { learningRateAt } from './learning-rate-schedule.ts';
import { readSftDataFile } from './sft-data-file.ts';
import { buildSftExample, type SftExample } from './sft-example.ts';
import { startTrainerService, type TrainerService } from './trainer-service.ts';

export type HfSftConfig = {
  model: string;
  data: string;
  processes: number;
  /** The run's length in optimizer steps (a resume may change it). */
  steps: number;
  /** This session's training-time budget in minutes, or null (a resume may change it). */
  maxMinutes: number | null;
  batchSize: number;
  learningRate: number;
  warmupSteps: number;
  minLearningRateRatio: number;
  checkpointEvery: number;
  microBatchTokens: number;
  activationCheckpointing: boolean;
  /** Ranks that split each packed row (sequence parallelism); divides `processes`. */
  sequenceParallel: number;
  /** Sharded parameters, gradients and optimizer state in host memory (GPU ranks; nothing changes on CPU ranks). */
  cpuOffload: boolean;
  maxSequenceTokens: number;
  prompt: PromptBuilderName;
  dialect: 'tags' | 'markdown';
  seed: number;
};

/**
 * One line of `metrics.jsonl` (names fixed: reports and other tools read them). Counts are of
 * the step's batch: `tokensTotal` every token (prompt, model text, interpreter output),
 * `tokensTrained` the tokens the loss is taken over (mask 1 with a previous token). `stepMs` is
 * the step's wall time seen by the run (batch transfer, forward, backward, optimizer);
 * `computeMs` the trainer's own time for it; `tokensTotalPerSecond` = tokensTotal / stepMs.
 */
export type HfSftMetrics = {
  step: number;
  loss: number;
  tokensTrained: number;
  tokensTotal: number;
  learningRate: number;
  gradNorm: number;
  stepMs: number;
  computeMs: number;
  tokensTotalPerSecond: number;
  skipped: boolean;
};

export type HfSftEvent =
  | {
      type: 'data-ready';
      examples: number;
      droppedTooLong: number;
      /** What "too long" was measured against (`--max-sequence-tokens N`, or the model's context). */
      limit: string;
      meanTokens: number;
    }
  | { type: 'trainer-ready'; url: string; worldSize: number; parameters: number; device: string }
  | { type: 'resumed'; step: number; checkpoint: string }
  | { type: 'schedule'; totalSteps: number; reason: 'steps' | 'minutes' | 'resume' }
  | ({ type: 'train-step'; totalSteps: number } & HfSftMetrics)
  | { type: 'checkpoint-saved'; step: number; path: string }
  | { type: 'model-exported'; path: string };

export class HfSftError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('HF_SFT_FAILED', message, options);
  }
}

export type HfSftOptions = {
  out: string;
  config: HfSftConfig;
  resume?: boolean;
  onEvent?: (event: HfSftEvent) => void;
  onTrainerLog?: (line: string) => void;
  /** Aborting stops after the current step (a checkpoint is saved); the run can be resumed. */
  signal?: AbortSignal;
};

/** How a run ended: the model exported, or stopped by `signal` after a checkpoint (resumable). */
export type HfSftResult =
  | { status: 'finished'; steps: number; finalLoss: number | null; model: string }
  | { status: 'stopped'; step: number; totalSteps: number; checkpoint: string };

const CONFIG_FILE = 'config.json';
const METRICS_FILE = 'metrics.jsonl';
const SCHEDULE_FILE = 'schedule.json';
/**
 * The default peak learning rate of a pretrained Hugging Face model: the Hugging Face Trainer's
 * own default (`TrainingArguments.learning_rate`, 5e-5), 100× below the byte model's 5e-3. A
 * pretrained model is fine-tuned, not trained: steps the size of a from-scratch rate undo
 * what pretraining learned (docs/training.md).
 */
export const HF_SFT_LEARNING_RATE = 5e-5;

/** Default warmup of a `--model` run: a tenth of its steps, at most 30 (the byte model's). */
export function hfSftWarmupSteps(steps: number): number {
  return Math.min(30, Math.ceil(steps / 10));
}

/** Steps timed before `maxMinutes` fixes the schedule (a pretrained model's CPU step takes ~1 min). */
export const CALIBRATION_STEPS = 2;
/**
 * Config fields that size a run or place its work rather than define it: a resume may change
 * them (how many ranks split a row changes no number a step computes beyond rounding).
 */
const SIZING_FIELDS = ['steps', 'maxMinutes', 'sequenceParallel'] as const;
/** Where the trainer keeps its state: it changes nothing computed, so a resume may add or drop it. */
const PLACEMENT_FIELDS = ['cpuOffload'] as const;

/** Runs (or resumes) an SFT job; resolves when the model is exported, or when `signal` stopped it after a checkpoint. */
export async function runHfSft({
  out,
  config,
  resume = false,
  onEvent = () => {},
  onTrainerLog,
  signal,
}: HfSftOptions): Promise<HfSftResult> {
  const dir = resolve(out);
  const model = resolve(config.model);
  const identity = runIdentity({ ...config, model, data: resolve(config.data) });
  // Refusals first, then the inputs are read; the run's identity is written only once they
  // were read (a bad --data leaves nothing that would refuse the corrected command), and
  // only under the folder's lock (a second writer never touches a live run's files).
  await checkRunFolder(dir, identity, resume);
  const examples = await loadExamples(config, model, onEvent);
  const releaseLock = await acquireRunFolderLock(dir, { command: 'train sft --model' });
  try {
    await checkRunFolder(dir, identity, resume);
    if (!resume) await writeFile(join(dir, CONFIG_FILE), `${JSON.stringify(identity, null, 2)}\n`);
    return await train({ dir, config, model, examples, resume, onEvent, onTrainerLog, signal });
  } finally {
    await releaseLock();
  }
}

async function train({
  dir,
  config,
  model,
  examples,
  resume,
  onEvent,
  onTrainerLog,
  signal,
}: {
  dir: string;
  config: HfSftConfig;
  model: string;
  examples: SftExample[];
  resume: boolean;
  onEvent: (event: HfSftEvent) => void;
  onTrainerLog: ((line: string) => void) | undefined;
  signal: AbortSignal | undefined;
}): Promise<HfSftResult> {
  const checkpoint = resume ? await newestCheckpoint(dir) : null;
  const startStep = checkpoint?.step ?? 0;
  if (resume) await keepMetricsUpTo(dir, startStep);
  let totalSteps = await initialTotalSteps(dir, config, resume);
  await writeSchedule(dir, config.steps, totalSteps);
  onEvent({ type: 'schedule', totalSteps, reason: resume ? 'resume' : 'steps' });

  const service: TrainerService = await startTrainerService({
    model,
    processes: config.processes,
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
    let finalLoss: number | null = null;
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
      const metrics: HfSftMetrics = {
        step: step + 1,
        loss: result.loss,
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
      finalLoss = result.loss;
      onEvent({ type: 'train-step', totalSteps, ...metrics });
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
    const modelDir = join(dir, 'model');
    await service.client.exportModel(modelDir);
    onEvent({ type: 'model-exported', path: modelDir });
    return { status: 'finished', steps: totalSteps, finalLoss, model: modelDir };
  } finally {
    await service.stop();
  }
}

/** The configuration a resume must match: everything but the sizing and placement fields. */
function runIdentity(config: HfSftConfig): RunIdentity {
  const identity: Record<string, unknown> = { ...config };
  for (const field of [...SIZING_FIELDS, ...PLACEMENT_FIELDS]) delete identity[field];
  return identity as RunIdentity;
}

/**
 * The schedule's length at the start of a session: `steps` for a new run; on resume, the saved
 * length unless `steps` or `maxMinutes` asks for a new one (the flags were given again).
 */
async function initialTotalSteps(dir: string, config: HfSftConfig, resume: boolean): Promise<number> {
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

/** The steps a run asked for, from its schedule.json (or, for older runs, its config.json), or null. */
export async function savedRunSteps(dir: string): Promise<number | null> {
  for (const name of [SCHEDULE_FILE, CONFIG_FILE]) {
    const path = join(dir, name);
    if (!existsSync(path)) continue;
    const steps = (JSON.parse(await readFile(path, 'utf8')) as { steps?: unknown }).steps;
    if (typeof steps === 'number') return steps;
  }
  return null;
}

/**
 * Refuses, without writing, a folder that is not this run: another run, no run to resume, other
 * files (`RUN_FOLDER_REFUSED`, the shared rule), a resume that changes the run.
 */
async function checkRunFolder(dir: string, identity: RunIdentity, resume: boolean): Promise<void> {
  if (!checkOutFolder({ folder: dir, marker: CONFIG_FILE, resume, command: 'train sft --model' })) return;
  const saved = (await readRunConfigFile(join(dir, CONFIG_FILE))) as RunIdentity;
  for (const field of [...SIZING_FIELDS, ...PLACEMENT_FIELDS]) delete saved[field];
  assertSameRun({
    run: dir,
    saved,
    current: identity,
    fresh: 'start a new run with another --out (without --resume)',
  });
}

async function loadExamples(
  config: HfSftConfig,
  model: string,
  onEvent: (event: HfSftEvent) => void,
): Promise<SftExample[]> {
  const tokenizer = await loadTokenizer(model);
  const dialect = getDialect(config.dialect);
  const prompt = promptBuilders[config.prompt];
  const solutions = await readSftDataFile(config.data);
  assertDialect(config.data, solutions, dialect);
  const limit = sequenceLimit(config.maxSequenceTokens, modelContextLength(model));
  const examples: SftExample[] = [];
  let dropped = 0;
  for (const solution of solutions) {
    const example = buildSftExample(solution, tokenizer, dialect, prompt);
    if (example.inputIds.length > limit.tokens) dropped++;
    else examples.push(example);
  }
  if (examples.length === 0) {
    throw new HfSftError(`${config.data}: no example fits ${limit.name} (${solutions.length} records read)`);
  }
  const meanTokens = examples.reduce((sum, example) => sum + example.inputIds.length, 0) / examples.length;
  onEvent({
    type: 'data-ready',
    examples: examples.length,
    droppedTooLong: dropped,
    limit: limit.name,
    meanTokens,
  });
  return examples;
}

/** The longest sequence a run trains: `--max-sequence-tokens`, or the model's context when shorter. */
export function sequenceLimit(
  maxSequenceTokens: number,
  contextTokens: number | null,
): { tokens: number; name: string } {
  return contextTokens !== null && contextTokens < maxSequenceTokens
    ? { tokens: contextTokens, name: `the model's context of ${contextTokens} tokens` }
    : { tokens: maxSequenceTokens, name: `--max-sequence-tokens ${maxSequenceTokens}` };
}

/** Refuses data whose code blocks are in another dialect's markup, naming the first such record. */
function assertDialect(file: string, solutions: readonly TaskSolution[], dialect: Dialect): void {
  for (const [index, solution] of solutions.entries()) {
    const issue = solutionDialectIssue(solution, dialect);
    if (issue !== null) {
      throw new HfSftError(
        `${file} record ${index + 1} (${solution.problem.id}): ${issue}. The run trains the ${dialect.name} ` +
          `dialect (--dialect); give data written in it (tasks write-arith --style tool --dialect ${dialect.name})`,
      );
    }
  }
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

/** After a crash, metric lines past the checkpoint belong to steps that will be redone. */
async function keepMetricsUpTo(dir: string, step: number): Promise<void> {
  const path = join(dir, METRICS_FILE);
  if (!existsSync(path)) return;
  const lines = (await readFile(path, 'utf8')).split('\n').filter((line) => line.trim() !== '');
  const kept = lines.filter((line) => {
    try {
      return (JSON.parse(line) as { step: number }).step <= step;
    } catch {
      return false; // a line cut by kill -9
    }
  });
  await writeFile(path, kept.map((line) => `${line}\n`).join(''));
}
