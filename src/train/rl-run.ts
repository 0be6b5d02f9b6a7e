/**
 * `train rl`: agentic RL over the rollout system. The parts (engines behind a router, a
 * `Trainer`, weight sync, a sandbox, the model's tokenizer and prompt; `rl-parts.ts`) come in
 * from the caller, or are started from the configuration (`startRlParts`). Each step:
 *
 * 1. rollout: request-level async or sync scheduling, partial rollout, adaptive batch (the
 *    rollout module), rewards and group advantages decided there;
 * 2. one GRPO step on the kept groups (mini-batches × epochs optimizer updates) with
 *    interpreter tokens masked, logprobs at the sampling temperature, importance ratios
 *    against each segment's recorded logprobs, the KL reference the initial policy;
 * 3. the trainer's checkpoint of the step, then the new weights to every engine (nothing to
 *    send when they share the trainer's weights), timed;
 * 4. `metrics.jsonl`, and held-out evaluation every K steps on an engine holding the new weights;
 * 5. the rollout's `checkpoint.json` commits the step.
 *
 * With `maxStaleness` S ≥ 1 the rollout of step k+1 runs while step k trains (steps commit in
 * order): the rollout of step j starts once step j−1−S is trained and synced, so no trajectory
 * starts more than S versions before the version that trains it; a trajectory continued across
 * a step boundary (partial rollout) may be one more behind, the rollout's `maxPolicyLag` (S + 1)
 * bounds that, and the decoupled objective (`proximal: recompute`) corrects what is off-policy.
 *
 * Records (append-only, beside the rollout's `trajectories.jsonl`, `groups.jsonl`,
 * `steps.jsonl`): `metrics.jsonl` (one line per step, with rollout/train/sync/idle times and the
 * staleness of the trained tokens), `evals.jsonl`, `checkpoints/step-N` (the trainer as it was
 * before step N), `model/` (the latest policy, for `solve`, `eval`, `engine serve`). After a kill,
 * every file is cut back to the committed steps, the trainer loads the checkpoint of the next
 * step, the engines are brought to those weights, and that step is redone: no step is lost or
 * applied twice. Not restored: the engines' sampling RNG (a redone step samples afresh).
 */
import { existsSync } from 'node:fs';
import { appendFile, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { BUILTIN_BENCHMARKS } from '../eval/builtin-benchmarks.ts';
import { loadBenchmark } from '../eval/load-benchmark.ts';
import { gradeTrajectory } from '../eval/trajectory-grade.ts';
import { gradeAnswer } from '../grader/index.ts';
import {
  assertRunIdentity,
  type RolloutProblem,
  readCheckpoint,
  rolloutConfigSchema,
  runRollout,
  type StepStats,
  truncateStepFile,
} from '../rollout/index.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { systemClock } from '../shared/clock.ts';
import { arithEvalProblems, arithTrainProblems, createSeededRandom } from '../tasks/index.ts';
import { grpoBatch } from './grpo-sequences.ts';
import { evaluateHeldOut, type HeldOutProblem } from './held-out-eval.ts';
import {
  checkpointPath,
  keepRolloutCopy,
  pruneCheckpoints,
  rewindToCheckpoint,
  savesCheckpointAfter,
} from './rl-checkpoints.ts';
import type { RlConfig } from './rl-config.ts';
import { defaultRlLearningRate, SMALL_MODEL_PARAMETERS } from './rl-learning-rate.ts';
import { type RlMetrics, rlMetrics } from './rl-metrics.ts';
import type { RlParts, RlWeightSync } from './rl-parts.ts';
import { loadRlProblems, rlProblemOrder, writeDecontaminationRecord } from './rl-problems.ts';
import { RL_FILES, type RlEvalMissing, type RlEvalRecord } from './rl-records.ts';
import { writeRlReport } from './rl-report.ts';
import { rlDefiningConfig } from './rl-run-config.ts';
import { startRlParts } from './rl-start-parts.ts';
import { rolloutCorrectionOptions } from './rollout-correction.ts';
import type { GrpoStepResult } from './types.ts';

export type RlEvent =
  | {
      type: 'rl-start';
      folder: string;
      config: RlConfig;
      resumedFromStep: number;
      parameters: number | null;
      /** The peak learning rate used (given, or the model size's default). */
      learningRate: number;
    }
  | { type: 'rl-step'; metrics: RlMetrics; rollout: StepStats; skipped: Record<string, number> }
  | { type: 'rl-eval'; record: RlEvalRecord }
  | { type: 'rl-sync'; sync: RlWeightSync }
  | {
      type: 'rl-end';
      steps: number;
      reason: 'completed' | 'time-budget' | 'interrupted';
      folder: string;
      /** From the first step's rollout start to the last step's commit (this call's steps). */
      wallMs: number;
    };

/** `--checkpoint-every` for a Hugging Face model when not given (12 bytes a parameter each). */
const CHECKPOINT_EVERY = 10;

export type RlRunOptions = {
  folder: string;
  config: RlConfig;
  resume: boolean;
  /** Training problems, taken in order and cycled (default: the arith task's pool). */
  problems?: readonly RolloutProblem[];
  /** Held-out problems (default: arith held-out problems of the configured levels). */
  evalProblems?: readonly HeldOutProblem[];
  /** What to run on (default: started from the configuration, and stopped at the end). */
  parts?: RlParts;
  /** Stop at a step boundary after this many minutes (the run stays resumable). */
  minutes?: number;
  signal?: AbortSignal;
  onEvent?: (event: RlEvent) => void;
  /** Progress lines of the parts (starting engines and the trainer) and the worker's log. */
  log?: (line: string) => void;
};

export class RlRunError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('RL_RUN_FAILED', message, options);
  }
}

/** Runs (or resumes) an RL run; resolves with the metrics of the steps run by this call. */
export async function runRl(options: RlRunOptions): Promise<RlMetrics[]> {
  const { folder, config } = options;
  if (!existsSync(join(config.init, 'config.json'))) {
    throw new RlRunError(
      `${config.init}: not a model folder (no config.json); train one with \`agentmath train sft\``,
    );
  }
  await mkdir(folder, { recursive: true });
  const parts = options.parts ?? (await startRlParts(config, folder, options.log, options.signal));
  try {
    return await runRlOn(parts, options);
  } finally {
    if (options.parts === undefined) await parts.close();
  }
}

async function runRlOn(parts: RlParts, options: RlRunOptions): Promise<RlMetrics[]> {
  const { folder, config } = options;
  // Refused before any file is touched: another run's folder, or a resume that changes it.
  await assertRunIdentity(folder, rlDefiningConfig(config), options.resume);
  const checkpoint = options.resume ? await readCheckpoint(folder) : null;
  // The steps since the newest trainer checkpoint are redone (the rollout rewound to it).
  const nextStep = checkpoint === null ? 0 : await rewindToCheckpoint(folder, checkpoint.nextStep);
  // A small model's checkpoint takes no time: every step, so a resume redoes none.
  const small = (parts.parameters ?? Number.POSITIVE_INFINITY) < SMALL_MODEL_PARAMETERS;
  const checkpointEvery = config.checkpointEvery ?? (small ? 1 : CHECKPOINT_EVERY);
  const learningRate =
    config.learningRate ?? defaultRlLearningRate(parts.parameters ?? Number.POSITIVE_INFINITY);
  for (const name of [RL_FILES.metrics, RL_FILES.evals]) await truncateStepFile(join(folder, name), nextStep);
  const { trainer } = parts;
  // The trainer starts from the committed step; a step 0 killed mid-way restarts from the
  // initial weights saved when the run began (a trainer by URL may have trained on).
  const start = checkpointPath(folder, nextStep);
  const startSaved = existsSync(start);
  if (nextStep > 0 || startSaved) await trainer.loadCheckpoint(start);
  let policyVersion = (await trainer.state()).policyVersion;
  if (nextStep === 0 && !startSaved && policyVersion !== 0) {
    throw new RlRunError(
      `the trainer holds policy version ${policyVersion}, not the initial weights: a new run needs a trainer started on ${config.init} (restart it, or resume the run it trained)`,
    );
  }
  // The engines generate with the committed weights before anything else (after a resume too).
  const initialSync = await parts.syncWeights(policyVersion);
  await appendLine(join(folder, RL_FILES.syncs), initialSync);
  options.onEvent?.({ type: 'rl-sync', sync: initialSync });
  await parts.publishModel(folder, { final: false });
  options.onEvent?.({
    type: 'rl-start',
    folder,
    config,
    resumedFromStep: nextStep,
    parameters: parts.parameters,
    learningRate,
  });
  if (nextStep === 0 && !startSaved) await trainer.saveCheckpoint(start);
  const maxTokens = Math.min(config.maxTokens ?? parts.contextTokens, parts.contextTokens);
  const rollout = rolloutConfigSchema.parse({
    groupSize: config.groupSize,
    batchSize: config.batchSize,
    mode: config.mode,
    stages: [
      {
        maxTokens,
        maxToolCalls: config.textOnly ? 0 : config.maxToolCalls,
        partialRollouts: config.partialRollouts,
      },
    ],
    maxNewTokensPerTurn: maxTokens,
    // S versions from the overlap, one more for a trajectory continued across a step boundary.
    maxPolicyLag: config.maxStaleness + 1,
    // The weights change: a segment whose engine gave no numeric version was made by unknown ones.
    unversioned: 'stale',
    advantageScale: config.advantage,
    resampleOnCorrect: config.resampleOnCorrect,
    rewardKind: config.reward,
    reward: { alpha: config.toolRewardAlpha, beta: config.toolRewardBeta, rMax: config.toolRewardMax },
  });
  const problems = options.problems ?? (await trainingProblems(config, folder));
  if (problems.length === 0) throw new RlRunError('no training problems');
  const evalProblems = options.evalProblems ?? (await heldOutProblems(config));
  const started = Date.now();
  const deadline =
    options.minutes === undefined ? Number.POSITIVE_INFINITY : started + options.minutes * 60_000;
  const done: RlMetrics[] = [];
  let stoppedForTime = false;
  const interrupted = () => options.signal?.aborted === true;
  // Wall-clock marks for the per-step times (rollout, train, sync, idle).
  const rolloutStarted = new Map<number, number>();
  const rolloutEnded = new Map<number, number>();
  let lastRolloutEnd: number | null = null;
  let lastTrainEnd = Date.now();
  let stepsInFlight = 0;
  try {
    await runRollout({
      folder,
      resume: options.resume,
      definingConfig: rlDefiningConfig(config),
      steps: config.steps,
      problems,
      config: rollout,
      overlap: config.maxStaleness,
      recordHistory: true,
      ...(config.skipHistory
        ? {
            skipHistory: {
              rule: { base: config.skipBase, max: config.skipMax, explore: config.explore },
              draw: (key: string) => createSeededRandom(`${config.seed}:skip-history:${key}`)(),
            },
          }
        : {}),
      agent: { sampling: { temperature: config.temperature, topP: 1, seed: config.seed } },
      // The version this step's groups will be trained at: the steps before it train first.
      policyVersion: () => policyVersion + stepsInFlight,
      shouldContinue: () => {
        if (interrupted()) return false;
        stoppedForTime = Date.now() >= deadline;
        if (stoppedForTime) return false;
        rolloutStarted.set(nextStep + rolloutStarted.size, Date.now());
        return true;
      },
      onRolloutEnd: (_result, step) => {
        stepsInFlight++;
        rolloutEnded.set(step, Date.now());
      },
      parts: {
        engine: parts.engine,
        routerName: parts.routerName,
        tokenizer: parts.tokenizer,
        dialect: parts.dialect,
        sandbox: parts.sandbox,
        park: parts.park,
        grade: (trajectory, problem) =>
          gradeTrajectory(trajectory, problem.answer, gradeAnswer, { sandbox: parts.sandbox }),
        clock: systemClock,
        random: createSeededRandom(`rl-rollout:${config.seed}:${nextStep}`),
        prompt: parts.prompt,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      },
      afterStep: async (result, step) => {
        if (interrupted()) throw new RlRunError('interrupted');
        // Step `step - 1` is committed: the rollout as it stands goes with checkpoint `step`, and
        // only the newest checkpoints up to it are kept (a newer one may not be usable yet).
        await keepRolloutCopy(folder, step);
        await pruneCheckpoints(folder, config.keepCheckpoints);
        const trainStarted = Date.now();
        const trainerIdleMs = trainStarted - lastTrainEnd;
        const trainedAtVersion = policyVersion;
        const batch = grpoBatch(result.kept, {
          maskTruncated: config.maskTruncated,
          maskVoid: config.maskVoid,
          maxTokens: parts.contextTokens,
          policyVersion: trainedAtVersion,
        });
        let train: GrpoStepResult | null = null;
        if (batch.sequences.length > 0) {
          train = await trainer.grpoStep({
            sequences: batch.sequences,
            learningRate,
            clipEpsilonLow: config.clipEpsilonLow,
            clipEpsilonHigh: config.clipEpsilonHigh,
            klCoef: config.klCoef,
            klEstimator: config.klEstimator,
            aggregation: config.aggregation,
            ...(config.dualClip === null ? {} : { dualClip: config.dualClip }),
            proximal: config.proximal,
            ...rolloutCorrectionOptions(config),
            temperature: config.temperature,
            miniBatches: config.miniBatches,
            epochs: config.epochs,
            // The KL reference is the initial policy, also after a resume from step k.
            referencePath: config.init,
          });
        }
        if (savesCheckpointAfter(step, { every: checkpointEvery, steps: config.steps })) {
          // A folder left by an earlier try of this step (its marker may be stale) is replaced.
          await rm(checkpointPath(folder, step + 1), { recursive: true, force: true });
          await trainer.saveCheckpoint(checkpointPath(folder, step + 1));
        }
        const trainMs = Date.now() - trainStarted;
        // A skipped update (non-finite gradient) leaves the version, and the engines, as they were.
        const trainedVersion = train?.policyVersion ?? policyVersion;
        const sync = trainedVersion === policyVersion ? null : await parts.syncWeights(trainedVersion);
        // Together, before any other wait: a rollout starting now reads a consistent version.
        policyVersion = trainedVersion;
        stepsInFlight--;
        if (sync !== null) {
          await appendLine(join(folder, RL_FILES.syncs), sync);
          options.onEvent?.({ type: 'rl-sync', sync });
          await parts.publishModel(folder, { final: false });
        }
        lastTrainEnd = Date.now();
        const rolloutStart = rolloutStarted.get(step) ?? trainStarted;
        const rolloutEnd = rolloutEnded.get(step) ?? trainStarted;
        const metrics = rlMetrics({
          step,
          policyVersion,
          groups: [...result.kept, ...result.dropped],
          rollout: result.stats,
          train,
          trainedAtVersion,
          timing: {
            rolloutMs: rolloutEnd - rolloutStart,
            trainMs,
            weightSyncMs: sync?.totalMs ?? 0,
            engineIdleMs: step === nextStep || lastRolloutEnd === null ? 0 : rolloutStart - lastRolloutEnd,
            trainerIdleMs,
          },
        });
        lastRolloutEnd = rolloutEnd;
        await appendLine(join(folder, RL_FILES.metrics), metrics);
        await writeRlReport([folder]);
        done.push(metrics);
        options.onEvent?.({ type: 'rl-step', metrics, rollout: result.stats, skipped: batch.skipped });
        const last = step + 1 === config.steps;
        if ((config.evalEvery > 0 && (step + 1) % config.evalEvery === 0) || last) {
          // An evaluation that could not run or finish is missing, with its reason, not a failed
          // step (the step is trained) and never 0%. A signal stops it at once.
          const evalStarted = Date.now();
          const record = await heldOutEval(
            parts,
            folder,
            config,
            evalProblems,
            step,
            policyVersion,
            options.signal,
          ).catch(
            (error: unknown): RlEvalMissing => ({
              step,
              policyVersion,
              accuracy: null,
              codeFrequency: null,
              toolCallsPerTrajectory: null,
              responseTokensMean: null,
              byLevel: null,
              problems: 0,
              missing: missingReason(error, options.signal),
              wallMs: Date.now() - evalStarted,
            }),
          );
          if (record !== null) {
            await appendLine(join(folder, RL_FILES.evals), record);
            await writeRlReport([folder]);
            options.onEvent?.({ type: 'rl-eval', record });
          }
        }
      },
    });
  } catch (error) {
    // A stop mid-step leaves that step uncommitted: a resume redoes it.
    if (!interrupted()) throw error;
  }
  const reason = interrupted() ? 'interrupted' : stoppedForTime ? 'time-budget' : 'completed';
  if (reason !== 'interrupted') await pruneCheckpoints(folder, config.keepCheckpoints);
  // The policy so far as a model folder (`solve`, `eval`, `engine serve` use it); a run stopped
  // by its time budget saves it too, and a resume carries on from the step checkpoint.
  if (reason !== 'interrupted' && done.length > 0) await parts.publishModel(folder, { final: true });
  const firstRollout = rolloutStarted.get(nextStep);
  options.onEvent?.({
    type: 'rl-end',
    steps: done.length,
    reason,
    folder,
    wallMs: firstRollout === undefined ? 0 : lastTrainEnd - firstRollout,
  });
  return done;
}

/** Why a held-out evaluation is missing, in words for `evals.jsonl` and the log. */
function missingReason(error: unknown, signal: AbortSignal | undefined): string {
  if (signal?.aborted === true) return `stopped by ${String(signal.reason)} before it finished`;
  return `could not run: ${error instanceof Error ? error.message : String(error)}`;
}

async function heldOutEval(
  parts: RlParts,
  folder: string,
  config: RlConfig,
  problems: readonly HeldOutProblem[],
  step: number,
  policyVersion: number,
  signal: AbortSignal | undefined,
): Promise<RlEvalRecord | null> {
  if (problems.length === 0) return null;
  const result = await evaluateHeldOut({
    engineUrl: parts.evalUrl,
    api: config.api,
    ...(parts.evalApiKey === undefined ? {} : { apiKey: parts.evalApiKey }),
    problems,
    contextTokens: Math.min(config.maxTokens ?? parts.contextTokens, parts.contextTokens),
    tokenizer: parts.tokenizer,
    prompt: parts.prompt,
    dialect: parts.dialect,
    // A step redone after a kill may have other weights: its evaluation starts afresh.
    outDir: join(folder, RL_FILES.evalRuns, `step-${String(step).padStart(5, '0')}`),
    fresh: true,
    maxToolCalls: config.textOnly ? 0 : config.maxToolCalls,
    temperature: 0,
    ...(signal === undefined ? {} : { signal }),
  });
  return {
    step,
    policyVersion,
    accuracy: result.accuracy,
    codeFrequency: result.problems === 0 ? 0 : result.usedTools / result.problems,
    toolCallsPerTrajectory: result.problems === 0 ? 0 : result.toolCalls / result.problems,
    responseTokensMean: result.responseTokensMean,
    byLevel: result.byLevel,
    problems: result.problems,
    wallMs: result.wallMs,
  };
}

/**
 * The training problems in the order they are taken: a file or benchmark (decontaminated,
 * `decontamination.json` in the run folder, shuffled afresh each epoch by the seed), or the
 * arith task's pool.
 */
async function trainingProblems(config: RlConfig, folder: string): Promise<RolloutProblem[]> {
  if (config.data === null && config.bench === null) {
    return arithTrainProblems({
      count: config.problemPool,
      levels: config.levels,
      seed: `rl:${config.seed}`,
    }).map((problem) => ({ id: problem.id, text: problem.problem, answer: problem.answer }));
  }
  const set = await loadRlProblems({
    data: config.data ?? undefined,
    bench: config.bench ?? undefined,
    seed: config.seed,
    decontaminate: config.decontaminate,
  });
  await writeDecontaminationRecord(folder, set);
  // Enough epochs for every step to take a full batch of fresh groups four times over.
  const wanted = config.steps * config.batchSize * 4;
  const epochs = Math.max(1, Math.ceil(wanted / set.problems.length));
  return rlProblemOrder(set.problems, { seed: config.seed, count: epochs * set.problems.length });
}

/** Held-out problems: a benchmark (`evalBench`, its first `evalProblems`), or arith ones. */
async function heldOutProblems(config: RlConfig): Promise<HeldOutProblem[]> {
  if (config.evalBench === null)
    return arithEvalProblems({ count: config.evalProblems, levels: config.levels });
  const benchmark = await loadBenchmark(config.evalBench, { builtins: BUILTIN_BENCHMARKS });
  return benchmark.problems
    .slice(0, config.evalProblems)
    .map((problem) => ({ id: problem.id, problem: problem.problem, answer: problem.answer, level: 0 }));
}

async function appendLine(path: string, value: unknown): Promise<void> {
  await appendFile(path, `${JSON.stringify(value)}\n`);
}
