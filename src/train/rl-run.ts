/**
 * `train rl`: agentic RL on the embedded model, colocated in one PyTorch worker. Each step:
 * a rollout step (request-level async or sync, partial rollout, adaptive batch — the rollout
 * module) → rewards (composite or accuracy) and group advantages (decided there) → one GRPO
 * step on the kept groups (mini-batches × epochs optimizer updates, 1 × 1 by default) with
 * interpreter tokens masked, logprobs at the sampling temperature, importance ratios against
 * each segment's recorded logprobs and the KL reference loaded from `--init` → the worker
 * serves the new weights at once, its policy version incremented (not for a skipped update)
 * → a checkpoint → held-out evaluation every K steps, with the model's own tokenizer.
 *
 * Records (append-only, in the run folder beside the rollout's `trajectories.jsonl`,
 * `groups.jsonl`, `steps.jsonl`): `metrics.jsonl` (one line per step), `evals.jsonl`,
 * `checkpoints/step-N` (model and optimizer as they were before step N). A step is committed by
 * the rollout's `checkpoint.json`; after a kill, every file is cut back to the committed steps,
 * the model and optimizer are loaded from the checkpoint of the next step and that step is
 * redone, so no step is lost or applied twice. Not restored: the worker's sampling RNG (a
 * redone step samples afresh).
 */
import { existsSync } from 'node:fs';
import { appendFile, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { problemOnlyPrompt, SessionPark } from '../agent/index.ts';
import { createEngine } from '../engine/create-engine.ts';
import { startEmbeddedWorker } from '../engine/embedded/worker-supervisor.ts';
import { loadTokenizer } from '../engine/load-tokenizer.ts';
import type { Tokenizer } from '../engine/tokenizer.ts';
import { gradeTrajectory } from '../eval/trajectory-grade.ts';
import { gradeAnswer } from '../grader/index.ts';
import { getDialect } from '../protocol/index.ts';
import {
  readCheckpoint,
  rolloutConfigSchema,
  runRollout,
  type StepStats,
  truncateStepFile,
} from '../rollout/index.ts';
import { createLocalSandbox } from '../sandbox/index.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { systemClock } from '../shared/clock.ts';
import { arithEvalProblems, arithTrainProblems, createSeededRandom } from '../tasks/index.ts';
import { grpoBatch } from './grpo-sequences.ts';
import { evaluateHeldOut } from './held-out-eval.ts';
import { type RlConfig, rlDefiningConfig } from './rl-config.ts';
import { type RlMetrics, rlMetrics } from './rl-metrics.ts';
import { RL_FILES, type RlEvalRecord } from './rl-records.ts';
import { writeRlReport } from './rl-report.ts';
import { type GrpoStepResult, TrainerClient } from './trainer-client.ts';

export type RlEvent =
  | { type: 'rl-start'; folder: string; config: RlConfig; resumedFromStep: number; parameters: number | null }
  | { type: 'rl-step'; metrics: RlMetrics; rollout: StepStats; skipped: Record<string, number> }
  | { type: 'rl-eval'; record: RlEvalRecord }
  | { type: 'rl-end'; steps: number; reason: 'completed' | 'time-budget' | 'interrupted'; folder: string };

export type RlRunOptions = {
  folder: string;
  config: RlConfig;
  resume: boolean;
  /** Stop at a step boundary after this many minutes (the run stays resumable). */
  minutes?: number;
  signal?: AbortSignal;
  onEvent?: (event: RlEvent) => void;
  workerLog?: (line: string) => void;
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
      `--init ${config.init}: not a model folder (no config.json); train one with \`agentmath train sft\``,
    );
  }
  await mkdir(folder, { recursive: true });
  const checkpoint = options.resume ? await readCheckpoint(folder) : null;
  const nextStep = checkpoint?.nextStep ?? 0;
  for (const name of [RL_FILES.metrics, RL_FILES.evals]) await truncateStepFile(join(folder, name), nextStep);
  const worker = await startEmbeddedWorker({
    model: config.init,
    seed: config.seed,
    restart: false,
    ...(config.trainThreads > 0 ? { trainThreads: config.trainThreads } : {}),
    ...(options.workerLog ? { onLog: (line: string) => options.workerLog?.(line) } : {}),
  });
  const sandbox = createLocalSandbox({ maxWorkers: config.sandboxWorkers, warmWorkers: 2 });
  const park = new SessionPark();
  const engine = createEngine({ api: 'sglang', url: worker.url, name: 'embedded', maxConcurrency: 64 });
  try {
    const trainer = new TrainerClient({ baseUrl: worker.url });
    const info = await trainer.modelInfo();
    if (nextStep > 0) await trainer.loadCheckpoint(checkpointPath(folder, nextStep));
    let policyVersion = (await trainer.state()).policyVersion;
    const tokenizer = await loadTokenizer(config.init);
    options.onEvent?.({
      type: 'rl-start',
      folder,
      config,
      resumedFromStep: nextStep,
      parameters: info.parameters,
    });
    if (nextStep === 0) await trainer.saveCheckpoint(checkpointPath(folder, 0));
    const rollout = rolloutConfigSchema.parse({
      groupSize: config.groupSize,
      batchSize: config.batchSize,
      mode: config.mode,
      stages: [
        {
          maxTokens: info.contextLength,
          maxToolCalls: config.textOnly ? 0 : config.maxToolCalls,
          partialRollouts: config.partialRollouts,
        },
      ],
      maxNewTokensPerTurn: info.contextLength,
      advantageScale: config.advantage,
      rewardKind: config.reward,
      reward: { alpha: config.toolRewardAlpha, beta: config.toolRewardBeta, rMax: config.toolRewardMax },
    });
    const problems = arithTrainProblems({
      count: config.problemPool,
      levels: config.levels,
      seed: `rl:${config.seed}`,
    }).map((problem) => ({ id: problem.id, text: problem.problem, answer: problem.answer }));
    const started = Date.now();
    const deadline =
      options.minutes === undefined ? Number.POSITIVE_INFINITY : started + options.minutes * 60_000;
    let stepStarted = Date.now();
    const done: RlMetrics[] = [];
    let stoppedForTime = false;
    const interrupted = () => options.signal?.aborted === true;
    try {
      await runRollout({
        folder,
        resume: options.resume,
        definingConfig: rlDefiningConfig(config),
        steps: config.steps,
        problems,
        config: rollout,
        agent: { sampling: { temperature: config.temperature, topP: 1, seed: config.seed } },
        policyVersion: () => policyVersion,
        shouldContinue: () => {
          stepStarted = Date.now();
          if (options.signal?.aborted) return false;
          stoppedForTime = Date.now() >= deadline;
          return !stoppedForTime;
        },
        parts: {
          engine,
          routerName: 'single',
          tokenizer,
          dialect: getDialect('tags'),
          sandbox,
          park,
          grade: (trajectory, problem) =>
            gradeTrajectory(trajectory, problem.answer, gradeAnswer, { sandbox }),
          clock: systemClock,
          random: createSeededRandom(`rl-rollout:${config.seed}:${nextStep}`),
          prompt: problemOnlyPrompt,
          ...(options.signal === undefined ? {} : { signal: options.signal }),
        },
        afterStep: async (result, step) => {
          if (options.signal?.aborted) throw new RlRunError('interrupted');
          const rolloutMs = Date.now() - stepStarted;
          const trainStarted = Date.now();
          const batch = grpoBatch(result.kept, {
            maskTruncated: config.maskTruncated,
            maskVoid: config.maskVoid,
            maxTokens: info.contextLength,
          });
          let train: GrpoStepResult | null = null;
          if (batch.sequences.length > 0) {
            train = await trainer.grpoStep({
              sequences: batch.sequences,
              learningRate: config.learningRate,
              clipEpsilonLow: config.clipEpsilonLow,
              clipEpsilonHigh: config.clipEpsilonHigh,
              klCoef: config.klCoef,
              klEstimator: config.klEstimator,
              aggregation: config.aggregation,
              ...(config.dualClip === null ? {} : { dualClip: config.dualClip }),
              proximal: config.proximal,
              offPolicyCap: config.offPolicyCap,
              offPolicyMode: config.offPolicyMode,
              temperature: config.temperature,
              miniBatches: config.miniBatches,
              epochs: config.epochs,
              // The KL reference is the initial policy, also after a resume from step k.
              referencePath: config.init,
            });
            // A skipped update (non-finite gradient) leaves the version as it was.
            policyVersion = train.policyVersion;
          }
          await trainer.saveCheckpoint(checkpointPath(folder, step + 1));
          const trainMs = Date.now() - trainStarted;
          const metrics = rlMetrics({
            step,
            policyVersion,
            groups: [...result.kept, ...result.dropped],
            rollout: result.stats,
            train,
            rolloutMs,
            trainMs,
          });
          await appendLine(join(folder, RL_FILES.metrics), metrics);
          await writeRlReport([folder]);
          done.push(metrics);
          options.onEvent?.({ type: 'rl-step', metrics, rollout: result.stats, skipped: batch.skipped });
          const last = step + 1 === config.steps;
          if ((config.evalEvery > 0 && (step + 1) % config.evalEvery === 0) || last) {
            const record = await heldOutEval(
              worker.url,
              folder,
              config,
              { contextTokens: info.contextLength, tokenizer },
              step,
              policyVersion,
            );
            await appendLine(join(folder, RL_FILES.evals), record);
            await writeRlReport([folder]);
            options.onEvent?.({ type: 'rl-eval', record });
          }
          // Checkpoint `step` is what a resume needs until this step is committed; the one
          // before it is not needed any more, unless it marks an evaluation point.
          const previous = step - 1;
          if (previous > 0 && !(config.evalEvery > 0 && previous % config.evalEvery === 0)) {
            await rm(checkpointPath(folder, previous), { recursive: true, force: true });
          }
        },
      });
    } catch (error) {
      // A stop mid-step leaves that step uncommitted: a resume redoes it.
      if (!interrupted()) throw error;
    }
    const reason = options.signal?.aborted ? 'interrupted' : stoppedForTime ? 'time-budget' : 'completed';
    // The policy so far as a model folder (`solve`, `eval`, `engine serve` use it); a run stopped
    // by its time budget saves it too, and a resume carries on from the step checkpoint.
    if (reason !== 'interrupted' && done.length > 0) await trainer.saveCheckpoint(join(folder, 'model'));
    options.onEvent?.({ type: 'rl-end', steps: done.length, reason, folder });
    return done;
  } finally {
    engine.close();
    await park.closeAll();
    await sandbox.close();
    await worker.stop();
  }
}

export function checkpointPath(folder: string, step: number): string {
  return join(folder, RL_FILES.checkpoints, `step-${String(step).padStart(5, '0')}`);
}

async function heldOutEval(
  url: string,
  folder: string,
  config: RlConfig,
  model: { contextTokens: number; tokenizer: Tokenizer },
  step: number,
  policyVersion: number,
): Promise<RlEvalRecord> {
  const result = await evaluateHeldOut({
    engineUrl: url,
    problems: arithEvalProblems({ count: config.evalProblems, levels: config.levels }),
    ...model,
    // A step redone after a kill may have other weights: its evaluation starts afresh.
    outDir: join(folder, RL_FILES.evalRuns, `step-${String(step).padStart(5, '0')}`),
    fresh: true,
    maxToolCalls: config.textOnly ? 0 : config.maxToolCalls,
    temperature: 0,
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

async function appendLine(path: string, value: unknown): Promise<void> {
  await appendFile(path, `${JSON.stringify(value)}\n`);
}
