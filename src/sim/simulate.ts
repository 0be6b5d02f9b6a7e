/**
 * Runs the real rollout step (`runRolloutStep`) and router over simulated replicas and a
 * simulated sandbox, in virtual time, once per configuration, and reports each one's step
 * time (mean over the steps after the first), throughput, re-prefilled tokens, preemptions,
 * GPU busy fraction and speedup over static-sync, beside the lower bound for the step.
 * Each configuration starts from scratch (new clock, caches, problems), so they see the same
 * problems and the same plans.
 */
import { problemOnlyPrompt } from '../agent/prompt-builder.ts';
import { SessionPark } from '../agent/session-park.ts';
import { createByteLevelTokenizer } from '../engine/byte-level-tokenizer.ts';
import { createRouterPolicy, Router } from '../engine/router/index.ts';
import { gradeAnswer } from '../grader/grade-answer.ts';
import { getDialect } from '../protocol/dialects.ts';
import {
  initialRolloutState,
  type ProblemSource,
  rolloutConfigSchema,
  runRolloutStep,
} from '../rollout/index.ts';
import { createSeededRandom } from '../tasks/seeded-random.ts';
import { BlockKeyCache } from './block-key-cache.ts';
import { mean } from './distribution.ts';
import { SIM_CONFIGURATIONS, type SimConfiguration } from './sim-configurations.ts';
import {
  emptyEngineMetrics,
  SimulatedEngine,
  type SimulatedEngineMetrics,
  type StretchRecord,
} from './simulated-engine.ts';
import { SimulatedPolicy } from './simulated-policy.ts';
import { SimulatedSandbox } from './simulated-sandbox.ts';
import { type StepBound, stepBound } from './step-bound.ts';
import { VirtualClock } from './virtual-clock.ts';
import type { Workload } from './workload.ts';
import { SIMULATED_ANSWER, workloadPlans } from './workload-plans.ts';

/** Re-prefilled tokens by why the trajectory's KV was gone (see `SimulatedEngineMetrics`). */
export type ReprefillByCause = {
  preempted: number;
  moved: number;
  weightUpdate: number;
  evicted: number;
};

/** One step of one configuration. */
export type SimStep = {
  step: number;
  seconds: number;
  tokensGenerated: number;
  reprefillTokens: number;
  reprefillByCause: ReprefillByCause;
  preemptions: number;
  busyFraction: number;
  groupsKept: number;
  trajectoriesFinished: number;
  trajectoriesParked: number;
  /** Trajectories restarted by the staleness bound. */
  trajectoriesStale: number;
  /** Whether the tail cut ended the step. */
  tailCut: boolean;
  /**
   * KV held by running sequences over the replicas' KV capacity, time-weighted, in each tenth
   * of the step (idle replicas count as empty): how full the batches were from start to end.
   */
  kvOccupancyByTenth: number[];
};

export type ConfigurationResult = {
  name: string;
  /** Mean step time over the steps after the first (the first when there is only one). */
  stepSeconds: number;
  /** Kept groups per counted step (partial rollout keeps fewer while its pipeline fills). */
  groupsKept: number;
  /**
   * Time per batch of `stepPrompts` kept groups over the counted steps: the step time
   * normalised by the groups it delivered, equal to `stepSeconds` in a steady state.
   */
  batchSeconds: number;
  /** static-sync's `stepSeconds` over this one's (the paper's measure). */
  speedup: number | null;
  /** static-sync's `batchSeconds` over this one's (per kept group). */
  batchSpeedup: number | null;
  tokensPerSecond: number;
  /** Per step, over the same steps. */
  reprefillTokens: number;
  reprefillByCause: ReprefillByCause;
  preemptions: number;
  busyFraction: number;
  /** KV occupancy (see `SimStep.kvOccupancyByTenth`) over the first eight tenths of a step and the last two. */
  kvOccupancy: { body: number; tail: number };
  /** Real seconds the simulation of this configuration took. */
  realSeconds: number;
  steps: SimStep[];
};

export type SimulationReport = {
  workload: Workload;
  steps: number;
  bound: StepBound;
  configurations: ConfigurationResult[];
};

export type SimulateOptions = {
  workload: Workload;
  /**
   * Rollout steps per configuration (default 16: partial rollout takes several steps to fill
   * its pipeline of parked trajectories, and a short run measures mostly that).
   */
  steps?: number;
  configurations?: readonly SimConfiguration[];
  onProgress?: (line: string) => void;
};

export async function simulate(options: SimulateOptions): Promise<SimulationReport> {
  const {
    workload,
    steps = 16,
    configurations = SIM_CONFIGURATIONS.filter((configuration) => configuration.onRequest !== true),
    onProgress = () => {},
  } = options;
  const results: ConfigurationResult[] = [];
  for (const configuration of configurations) {
    const result = await simulateConfiguration(workload, configuration, steps, onProgress);
    results.push(result);
    onProgress(
      `${configuration.name}: ${result.stepSeconds.toFixed(0)} s per step (simulated in ${result.realSeconds.toFixed(1)} s)`,
    );
  }
  const baseline = results.find((result) => result.name === 'static-sync') ?? null;
  for (const result of results) {
    result.speedup = baseline === null ? null : baseline.stepSeconds / result.stepSeconds;
    result.batchSpeedup = baseline === null ? null : baseline.batchSeconds / result.batchSeconds;
  }
  return { workload, steps, bound: boundOf(workload), configurations: results };
}

/** The bound for one step's worth of new trajectories (the first step's problems and plans). */
export function boundOf(workload: Workload): StepBound {
  const plans = workloadPlans(workload);
  const tokenizer = createByteLevelTokenizer();
  const trajectories = [];
  for (let problem = 0; problem < workload.stepPrompts; problem++) {
    const promptTokens = tokenizer.encode(
      tokenizer.applyChatTemplate(
        problemOnlyPrompt({ id: '', text: plans.problemText(problem) }, getDialect('tags')),
      ),
    ).length;
    for (let sample = 0; sample < workload.groupSize; sample++) {
      trajectories.push({ promptTokens, problem, plan: plans.planFor(problem, sample) });
    }
  }
  return stepBound(workload, trajectories);
}

/**
 * Trajectories the replicas' KV holds at once at a trajectory's mean context over its life
 * (prompt + half of its response and tool output), at least one group.
 */
export function kvAdmissionLimit(workload: Workload): number {
  const meanContext =
    mean(workload.promptTokens) +
    (mean(workload.responseTokens) + workload.toolCalls.mean * mean(workload.toolOutputTokens)) / 2;
  return Math.max(
    workload.groupSize,
    Math.floor((workload.replicas * workload.kvCapacityTokens) / meanContext),
  );
}

async function simulateConfiguration(
  workload: Workload,
  configuration: SimConfiguration,
  steps: number,
  onProgress: (line: string) => void,
): Promise<ConfigurationResult> {
  const realStarted = performance.now();
  const clock = new VirtualClock();
  const tokenizer = createByteLevelTokenizer();
  const plans = workloadPlans(workload);
  const policy = new SimulatedPolicy({ planFor: plans.planFor, decode: (ids) => tokenizer.decode(ids) });
  const keyCache = new BlockKeyCache({ blockTokens: workload.blockTokens });
  const residence = new Map<string, { replica: string; version: number }>();
  // Stretches of work in the current step, for its occupancy profile.
  let stretches: StretchRecord[] = [];
  const engines = Array.from(
    { length: workload.replicas },
    (_, index) =>
      new SimulatedEngine({
        name: `replica-${index}`,
        clock,
        policy,
        costModel: workload.costModel,
        kvCapacityTokens: workload.kvCapacityTokens,
        maxRunningRequests: workload.maxRunningRequests,
        blockTokens: workload.blockTokens,
        keyCache,
        residence,
        onStretch: (stretch) => stretches.push(stretch),
      }),
  );
  const router = new Router({
    replicas: engines.map((engine) => ({ name: engine.name, engine })),
    policy: createRouterPolicy(configuration.router),
    clock,
    maxInFlightPerReplica: workload.maxRunningRequests,
  });
  const sandbox = new SimulatedSandbox({
    clock,
    workers: workload.sandboxWorkers,
    latencyMs: workload.toolLatencyMs,
    random: createSeededRandom(`${workload.seed}:sandbox`),
  });
  const park = new SessionPark();
  let nextProblem = 0;
  const problems: ProblemSource = {
    next: () => {
      const index = nextProblem++;
      return { id: `problem-${index}`, text: plans.problemText(index), answer: SIMULATED_ANSWER };
    },
  };
  const { budgets } = workload;
  const config = rolloutConfigSchema.parse({
    groupSize: workload.groupSize,
    batchSize: workload.stepPrompts,
    mode: configuration.mode,
    stages: [budgets],
    partialRollout: configuration.partialRollout,
    fillBatch: configuration.fillBatch === true,
    maxNewTokensPerTurn: budgets.maxTokens,
    // A trajectory spans up to N steps under partial rollout; none is stale within that.
    maxPolicyLag: budgets.partialRollouts,
    maxActiveTrajectories: configuration.kvAdmission
      ? kvAdmissionLimit(workload)
      : 4 * workload.stepPrompts * workload.groupSize,
    kvBudgetTokens:
      configuration.kvBudget === undefined
        ? null
        : Math.round(configuration.kvBudget * workload.replicas * workload.kvCapacityTokens),
    tailCut: configuration.tailCut ?? null,
    ...(configuration.overProvision === undefined
      ? {}
      : { overProvision: Math.round(configuration.overProvision * workload.stepPrompts) }),
  });
  const random = createSeededRandom(`${workload.seed}:rollout`);
  let nextId = 0;
  const figures: SimStep[] = [];
  await clock.run(async () => {
    let state = initialRolloutState();
    for (let step = 0; step < steps; step++) {
      policy.version = step;
      // The weights changed between steps: engines drop KV computed with the old ones.
      if (step > 0) for (const engine of engines) engine.flushCache();
      const startedMs = clock.now();
      stretches = [];
      const before = totals(engines);
      const result = await runRolloutStep(
        { step, policyVersion: step, state, problems, config },
        {
          engine: router,
          routerName: configuration.router,
          tokenizer,
          dialect: getDialect('tags'),
          sandbox,
          park,
          grade: async (trajectory, problem) => ({
            correct: (await gradeAnswer(trajectory.answer ?? '', problem.answer)).correct,
          }),
          clock,
          random,
          prompt: problemOnlyPrompt,
          createId: () => `trajectory-${nextId++}`,
        },
      );
      state = result.state;
      const seconds = (clock.now() - startedMs) / 1000;
      const after = totals(engines);
      figures.push({
        step,
        seconds,
        tokensGenerated: after.generatedTokens - before.generatedTokens,
        reprefillTokens: after.reprefillTokens - before.reprefillTokens,
        reprefillByCause: {
          preempted: after.reprefillPreemptedTokens - before.reprefillPreemptedTokens,
          moved: after.reprefillMovedTokens - before.reprefillMovedTokens,
          weightUpdate: after.reprefillWeightUpdateTokens - before.reprefillWeightUpdateTokens,
          evicted: after.reprefillEvictedTokens - before.reprefillEvictedTokens,
        },
        preemptions: after.preemptions - before.preemptions,
        busyFraction: seconds > 0 ? (after.busyMs - before.busyMs) / 1000 / (seconds * engines.length) : 0,
        groupsKept: result.stats.groupsKept,
        trajectoriesFinished: result.stats.trajectoriesFinished,
        trajectoriesParked: result.stats.trajectoriesParked,
        trajectoriesStale: result.stats.trajectoriesStale,
        tailCut: result.stats.tailCut,
        // Stretches still under way count up to now (their whole is reported when they end).
        kvOccupancyByTenth: occupancyByTenth(
          [...stretches, ...engines.flatMap((engine) => engine.stretchSoFar() ?? [])],
          startedMs,
          clock.now(),
          workload,
        ),
      });
      onProgress(
        `${configuration.name} step ${step}: ${seconds.toFixed(0)} s, ${result.stats.groupsKept} groups kept`,
      );
    }
    await park.closeAll();
  });
  onProgress(
    `${configuration.name}: ${clock.firedTimers} events, ${clock.realFlushes} real timers-phase flushes`,
  );
  const counted = figures.length > 1 ? figures.slice(1) : figures;
  const meanOf = (pick: (step: SimStep) => number) =>
    counted.reduce((sum, step) => sum + pick(step), 0) / counted.length;
  const stepSeconds = meanOf((step) => step.seconds);
  const totalSeconds = counted.reduce((sum, step) => sum + step.seconds, 0);
  const groupsKept = counted.reduce((sum, step) => sum + step.groupsKept, 0);
  return {
    name: configuration.name,
    stepSeconds,
    groupsKept: groupsKept / counted.length,
    batchSeconds:
      groupsKept > 0 ? (totalSeconds * workload.stepPrompts) / groupsKept : Number.POSITIVE_INFINITY,
    speedup: null,
    batchSpeedup: null,
    tokensPerSecond:
      totalSeconds > 0 ? counted.reduce((sum, step) => sum + step.tokensGenerated, 0) / totalSeconds : 0,
    reprefillTokens: meanOf((step) => step.reprefillTokens),
    reprefillByCause: {
      preempted: meanOf((step) => step.reprefillByCause.preempted),
      moved: meanOf((step) => step.reprefillByCause.moved),
      weightUpdate: meanOf((step) => step.reprefillByCause.weightUpdate),
      evicted: meanOf((step) => step.reprefillByCause.evicted),
    },
    preemptions: meanOf((step) => step.preemptions),
    busyFraction: meanOf((step) => step.busyFraction),
    kvOccupancy: {
      body: meanOf((step) => averageOf(step.kvOccupancyByTenth.slice(0, 8))),
      tail: meanOf((step) => averageOf(step.kvOccupancyByTenth.slice(8))),
    },
    realSeconds: (performance.now() - realStarted) / 1000,
    steps: figures,
  };
}

function averageOf(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** Time-weighted KV occupancy of all replicas in each tenth of [startMs, endMs). */
function occupancyByTenth(
  stretches: readonly StretchRecord[],
  startMs: number,
  endMs: number,
  workload: Workload,
): number[] {
  const tenth = (endMs - startMs) / 10;
  const held = new Array<number>(10).fill(0);
  if (tenth <= 0) return held;
  for (const stretch of stretches) {
    // A stretch is spread evenly over its time, which may cross tenths.
    const from = Math.max(stretch.startMs, startMs);
    const to = Math.min(stretch.startMs + stretch.ms, endMs);
    const occupancy = stretch.meanContextTokens / stretch.kvCapacityTokens;
    for (let index = Math.floor((from - startMs) / tenth); index < 10; index++) {
      const lo = startMs + index * tenth;
      const overlap = Math.min(to, lo + tenth) - Math.max(from, lo);
      if (overlap <= 0) break;
      held[index] = (held[index] ?? 0) + overlap * occupancy;
    }
  }
  return held.map((value) => value / (tenth * workload.replicas));
}

function totals(engines: readonly SimulatedEngine[]): SimulatedEngineMetrics {
  const sum = emptyEngineMetrics();
  for (const engine of engines) {
    const metrics = engine.metrics();
    for (const key of Object.keys(sum) as (keyof SimulatedEngineMetrics)[]) sum[key] += metrics[key];
  }
  return sum;
}
