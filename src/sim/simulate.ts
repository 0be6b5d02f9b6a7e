/**
 * Runs the real rollout step (`runRolloutStep`) and router over simulated replicas and a
 * simulated sandbox, in virtual time, once per configuration and seed, and reports each one's
 * time per batch of kept groups (the headline: configurations that keep different numbers of
 * groups a step do unequal work per step), its step time and the step's parts (rollout,
 * training, weight sync: sequential in sync mode, training overlapped with the next rollout
 * in async mode under a policy lag of at least 1), throughput, re-prefill, preemptions, GPU
 * busy fraction and speedups over static-sync, beside the lower bound for the groups it kept.
 * Each run starts from scratch (new clock, caches, problems), so the configurations of one
 * seed see the same problems and plans; with several seeds every figure has its
 * min / median / max.
 */
import { problemOnlyPrompt } from '../agent/prompt-builder.ts';
import { SessionPark } from '../agent/session-park.ts';
import { createByteLevelTokenizer } from '../engine/byte-level-tokenizer.ts';
import { createRouterPolicy, Router } from '../engine/router/index.ts';
import { gradeAnswer } from '../grader/grade-answer.ts';
import { getDialect } from '../protocol/dialects.ts';
import {
  initialRolloutState,
  ProblemHistory,
  ProblemSkipper,
  type ProblemSource,
  rolloutConfigSchema,
  runRolloutStep,
} from '../rollout/index.ts';
import { createSeededRandom } from '../tasks/seeded-random.ts';
import { type AbandonAudit, groupWouldBeKept, planSoFar, ranSoFar } from './abandoned-groups.ts';
import { BlockKeyCache } from './block-key-cache.ts';
import { mean } from './distribution.ts';
import { SIM_CONFIGURATIONS, type SimConfiguration } from './sim-configurations.ts';
import { SimulationNoProgressError, WorkloadInvalidError } from './sim-errors.ts';
import {
  emptyEngineMetrics,
  SimulatedEngine,
  type SimulatedEngineMetrics,
  type StretchRecord,
} from './simulated-engine.ts';
import { SimulatedPolicy, simulatedProblemIndex } from './simulated-policy.ts';
import { SimulatedSandbox } from './simulated-sandbox.ts';
import { type BoundTrajectory, type StepBound, stepBound } from './step-bound.ts';
import type { TrajectoryPlan } from './trajectory-plan.ts';
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
  /** The step's time: rollout, training and weight sync as the configuration composes them. */
  seconds: number;
  rolloutSeconds: number;
  /** Trainer time for the step's kept trajectories. */
  trainSeconds: number;
  weightSyncSeconds: number;
  tokensGenerated: number;
  reprefillTokens: number;
  reprefillByCause: ReprefillByCause;
  preemptions: number;
  /** Tokens loaded back from a host-memory KV tier instead of prefilled again. */
  hostLoadedTokens: number;
  busyFraction: number;
  /**
   * Replica-seconds of the step (summed over replicas) spent prefilling, of those re-prefilling,
   * and decoding; and the decode iterations run: where the replicas' busy time went.
   */
  busySeconds: { prefill: number; reprefill: number; decode: number };
  decodeIterations: number;
  groupsKept: number;
  trajectoriesFinished: number;
  trajectoriesParked: number;
  /** Trajectories restarted by the staleness bound. */
  trajectoriesStale: number;
  /** Whether the tail cut ended the step. */
  tailCut: boolean;
  /** Early abandonment (`abandonAgreeing`): groups abandoned, and of them those that would have been kept. */
  groupsAbandoned: number;
  keptGroupsLost: number;
  /** Pre-rollout skipping (`skipHistory`): problems skipped, and of them those whose group would have been kept. */
  problemsSkipped: number;
  skippedWouldKeep: number;
  /**
   * KV held by running sequences over the replicas' KV capacity, time-weighted, in each tenth
   * of the step (idle replicas count as empty): how full the batches were from start to end.
   */
  kvOccupancyByTenth: number[];
};

/** The parts of a step, means over the counted steps. */
export type StepParts = { rolloutSeconds: number; trainSeconds: number; weightSyncSeconds: number };

/** A figure over the seeds. */
export type Interval = { min: number; median: number; max: number };

/** The figures every seed reports, and that get an interval over the seeds. */
export const SEED_FIGURES = [
  'batchSeconds',
  'batchSpeedup',
  'boundBatchSeconds',
  'batchOverBound',
  'boundDecidedBatchSeconds',
  'stepSeconds',
  'speedup',
  'groupsKept',
  'rolloutSeconds',
  'trainSeconds',
  'problemsSkipped',
  'skipKeptGroupsLost',
] as const;
export type SeedFigure = (typeof SEED_FIGURES)[number];

export type ConfigurationResult = {
  name: string;
  /** The rollout's `maxPolicyLag` the configuration ran with. */
  maxPolicyLag: number;
  /** Whether training overlaps the next step's rollout (async with a policy lag of at least 1). */
  trainingOverlapped: boolean;
  /** Mean step time over the steps after the first (the first when there is only one). */
  stepSeconds: number;
  stepParts: StepParts;
  /**
   * The lower bound per batch of `stepPrompts` groups for the groups this configuration kept
   * in its counted steps (their own plans): the rollout bound and the training of those
   * groups overlapped, plus one weight sync.
   */
  boundBatchSeconds: number;
  /** `batchSeconds` over `boundBatchSeconds`. */
  batchOverBound: number;
  /**
   * The same bound with the dropped groups' trajectories in its work (still per batch of kept
   * groups): what no schedule avoids once it must find out which groups drop by running them.
   */
  boundDecidedBatchSeconds: number;
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
  /** Per step: tokens loaded back from a host-memory KV tier. */
  hostLoadedTokens: number;
  /**
   * Early abandonment, per counted step: groups abandoned and, of them, groups that would have
   * been kept had every member run (their plans disagree), and the same for those abandoned on
   * agreeing wrong answers; over the counted steps (not per step), how often that estimate
   * misjudged the groups decided the normal way (`mispredicted` of `checked`). The first seed's.
   */
  abandonment: AbandonAudit;
  /**
   * Pre-rollout skipping, per counted step: problems skipped before generation, and of them
   * those whose group would have been kept had it run (their plans disagree): kept groups lost
   * to wrong skips. Zeros without `skipHistory`. The first seed's.
   */
  skipping: { problemsSkipped: number; keptGroupsLost: number };
  busyFraction: number;
  /** KV occupancy (see `SimStep.kvOccupancyByTenth`) over the first eight tenths of a step and the last two. */
  kvOccupancy: { body: number; tail: number };
  /** Real seconds the simulation of this configuration took (all seeds). */
  realSeconds: number;
  /** The first seed's steps. */
  steps: SimStep[];
  /** Min / median / max over the seeds (the figures above are the medians). */
  intervals: Record<SeedFigure, Interval>;
  /** Each seed's figures. */
  seeds: ({ seed: number } & Record<SeedFigure, number>)[];
};

export type SimulationReport = {
  workload: Workload;
  steps: number;
  /** The workload seeds run (`workload.seed`, +1, …). */
  seeds: number[];
  /** The bound for the first step's problems (the first seed). */
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
  /** Seeds per configuration (default 1): the workload's seed, then +1, +2, … */
  seeds?: number;
  /**
   * The rollout's `maxPolicyLag` (default: the stage's partial rollouts N, so a partial
   * trajectory spanning its N steps is never stale; production's default is 1).
   */
  maxPolicyLag?: number;
  onProgress?: (line: string) => void;
};

export async function simulate(options: SimulateOptions): Promise<SimulationReport> {
  const {
    workload,
    steps = 16,
    configurations = SIM_CONFIGURATIONS.filter((configuration) => configuration.onRequest !== true),
    seeds = 1,
    maxPolicyLag,
    onProgress = () => {},
  } = options;
  const seedList = Array.from({ length: seeds }, (_, index) => workload.seed + index);
  const runs: SeedRun[][] = configurations.map(() => []);
  for (const seed of seedList) {
    const seeded = { ...workload, seed };
    for (const [index, configuration] of configurations.entries()) {
      const run = await simulateConfiguration(seeded, configuration, steps, maxPolicyLag, onProgress);
      runs[index]?.push(run);
      onProgress(
        `${configuration.name} seed ${seed}: ${run.batchSeconds.toFixed(0)} s per ${workload.stepPrompts} kept groups, ` +
          `${run.stepSeconds.toFixed(0)} s per step (simulated in ${run.realSeconds.toFixed(1)} s)`,
      );
    }
  }
  const baselineIndex = configurations.findIndex((configuration) => configuration.name === 'static-sync');
  const results = configurations.map((_, index) =>
    combineSeeds(runs[index] ?? [], baselineIndex < 0 ? null : (runs[baselineIndex] ?? null)),
  );
  return { workload, steps, seeds: seedList, bound: boundOf(workload), configurations: results };
}

/** One configuration under one seed: the result's fields, each a single figure. */
type SeedRun = Omit<ConfigurationResult, 'intervals' | 'seeds'> & { seed: number };

function combineSeeds(runs: readonly SeedRun[], baseline: readonly SeedRun[] | null): ConfigurationResult {
  const first = runs[0] as SeedRun;
  const figures = runs.map((run, index) => {
    const base = baseline?.[index] ?? null;
    const row = {
      seed: run.seed,
      batchSeconds: run.batchSeconds,
      batchSpeedup: base === null ? Number.NaN : base.batchSeconds / run.batchSeconds,
      boundBatchSeconds: run.boundBatchSeconds,
      batchOverBound: run.batchOverBound,
      boundDecidedBatchSeconds: run.boundDecidedBatchSeconds,
      stepSeconds: run.stepSeconds,
      speedup: base === null ? Number.NaN : base.stepSeconds / run.stepSeconds,
      groupsKept: run.groupsKept,
      rolloutSeconds: run.stepParts.rolloutSeconds,
      trainSeconds: run.stepParts.trainSeconds,
      problemsSkipped: run.skipping.problemsSkipped,
      skipKeptGroupsLost: run.skipping.keptGroupsLost,
    };
    return row;
  });
  const intervals = Object.fromEntries(
    SEED_FIGURES.map((figure) => [figure, intervalOf(figures.map((row) => row[figure]))]),
  ) as Record<SeedFigure, Interval>;
  const medianOf = (pick: (run: SeedRun) => number) => intervalOf(runs.map(pick)).median;
  return {
    ...first,
    stepSeconds: intervals.stepSeconds.median,
    groupsKept: intervals.groupsKept.median,
    batchSeconds: intervals.batchSeconds.median,
    boundBatchSeconds: intervals.boundBatchSeconds.median,
    batchOverBound: intervals.batchOverBound.median,
    boundDecidedBatchSeconds: intervals.boundDecidedBatchSeconds.median,
    speedup: baseline === null ? null : intervals.speedup.median,
    batchSpeedup: baseline === null ? null : intervals.batchSpeedup.median,
    stepParts: {
      rolloutSeconds: intervals.rolloutSeconds.median,
      trainSeconds: intervals.trainSeconds.median,
      weightSyncSeconds: first.stepParts.weightSyncSeconds,
    },
    tokensPerSecond: medianOf((run) => run.tokensPerSecond),
    reprefillTokens: medianOf((run) => run.reprefillTokens),
    preemptions: medianOf((run) => run.preemptions),
    busyFraction: medianOf((run) => run.busyFraction),
    realSeconds: runs.reduce((sum, run) => sum + run.realSeconds, 0),
    intervals,
    seeds: figures,
  };
}

/** Min, median and max (the median of an even count is the mean of the middle two). */
export function intervalOf(values: readonly number[]): Interval {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const median =
    sorted.length % 2 === 1
      ? (sorted[middle] as number)
      : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2;
  return { min: sorted[0] ?? Number.NaN, median, max: sorted.at(-1) ?? Number.NaN };
}

/** The bound for one step's worth of new trajectories (the first step's problems and plans). */
export function boundOf(workload: Workload): StepBound {
  const plans = workloadPlans(workload);
  const tokenizer = createByteLevelTokenizer();
  const trajectories = [];
  for (let problem = 0; problem < workload.stepPrompts; problem++) {
    const promptTokens = promptTokensOf(tokenizer, plans.problemText(problem));
    for (let sample = 0; sample < workload.groupSize; sample++) {
      trajectories.push({ promptTokens, problem, plan: plans.planFor(problem, sample) });
    }
  }
  return stepBound(workload, trajectories);
}

/** Tokens of a problem-only prompt under the simulator's tokenizer and dialect. */
function promptTokensOf(tokenizer: ReturnType<typeof createByteLevelTokenizer>, text: string): number {
  return tokenizer.encode(
    tokenizer.applyChatTemplate(problemOnlyPrompt({ id: '', text }, getDialect('tags'))),
  ).length;
}

/** Tokens a trainer processes for a trajectory: its prompt, its response and its tool output. */
function trainedTokens(workload: Workload, trajectory: BoundTrajectory): number {
  const { plan } = trajectory;
  const calls = plan.toolCalls.slice(0, workload.budgets.maxToolCalls);
  return (
    trajectory.promptTokens +
    Math.min(plan.responseTokens, workload.budgets.maxTokens) +
    calls.reduce((sum, call) => sum + Math.min(call.outputTokens, 2000), 0)
  );
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
  maxPolicyLagOption: number | undefined,
  onProgress: (line: string) => void,
): Promise<SeedRun> {
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
        ...(configuration.hostKv === undefined
          ? {}
          : {
              hostKv: {
                capacityTokens: configuration.hostKv * workload.kvCapacityTokens,
                loadPerTokenMs: hostLoadPerTokenMs(workload, configuration),
              },
            }),
        ...(configuration.chunkedPrefillTokens === undefined
          ? {}
          : { chunkedPrefillTokens: configuration.chunkedPrefillTokens }),
        ...(configuration.kvTtlSeconds === undefined ? {} : { kvTtlMs: configuration.kvTtlSeconds * 1000 }),
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
  // Far beyond what dropped groups and extra rounds need: past it, no step will ever end.
  const problemLimit = 100 * workload.stepPrompts * steps;
  const { problemSet } = workload;
  if (configuration.skipHistory !== undefined && problemSet === undefined)
    throw new WorkloadInvalidError(
      `workload ${workload.name}: configuration ${configuration.name} skips problems by their history, which needs problems that recur (problemSet)`,
    );
  const history = configuration.skipHistory === undefined ? null : new ProblemHistory();
  const skipper =
    history === null || configuration.skipHistory === undefined
      ? null
      : new ProblemSkipper({
          history,
          rule: configuration.skipHistory,
          draw: (key) => createSeededRandom(`${workload.seed}:skip-history:${key}`)(),
        });
  let currentStep = 0;
  let stepSkips = { skipped: 0, wouldKeep: 0 };
  const problems: ProblemSource = {
    next: () => {
      for (;;) {
        if (nextProblem >= problemLimit)
          throw new SimulationNoProgressError(nextProblem, steps, workload.stepPrompts);
        const index = nextProblem++;
        // A recurring problem keeps its id (the history's key); the text names the draw.
        const base = problemSet === undefined ? index : index % problemSet.size;
        const problem = { id: `problem-${base}`, text: plans.problemText(index), answer: SIMULATED_ANSWER };
        if (skipper !== null && problemSet !== undefined) {
          const epoch = Math.floor(index / problemSet.size);
          if (skipper.consider(problem, epoch, currentStep) !== null) {
            stepSkips.skipped++;
            const members = Array.from({ length: workload.groupSize }, (_, sample) =>
              plans.planFor(index, sample),
            );
            if (groupWouldBeKept(workload, promptTokensOfDraw(index), members)) stepSkips.wouldKeep++;
            continue;
          }
        }
        return problem;
      }
    },
  };
  const { budgets } = workload;
  // A trajectory spans up to N steps under partial rollout; by default none is stale within that.
  const maxPolicyLag = maxPolicyLagOption ?? budgets.partialRollouts;
  const trainingOverlapped = configuration.mode === 'async' && maxPolicyLag >= 1;
  const msPerTrainToken = workload.training?.msPerToken ?? 0;
  const weightSyncSeconds = (workload.training?.weightSyncMs ?? 0) / 1000;
  const promptTokens = new Map<number, number>();
  const promptTokensOfDraw = (problem: number): number => {
    let tokens = promptTokens.get(problem);
    if (tokens === undefined) {
      tokens = promptTokensOf(tokenizer, plans.problemText(problem));
      promptTokens.set(problem, tokens);
    }
    return tokens;
  };
  const keptTrajectories: BoundTrajectory[][] = [];
  const droppedTrajectories: BoundTrajectory[][] = [];
  const audits: AbandonAudit[] = [];
  const config = rolloutConfigSchema.parse({
    groupSize: workload.groupSize,
    batchSize: workload.stepPrompts,
    mode: configuration.mode,
    stages: [budgets],
    partialRollout: configuration.partialRollout,
    fillBatch: configuration.fillBatch === true,
    maxNewTokensPerTurn: budgets.maxTokens,
    maxPolicyLag,
    maxActiveTrajectories: configuration.kvAdmission
      ? kvAdmissionLimit(workload)
      : 4 * workload.stepPrompts * workload.groupSize,
    kvBudgetTokens:
      configuration.kvBudget === undefined
        ? null
        : Math.round(configuration.kvBudget * workload.replicas * workload.kvCapacityTokens),
    tailCut: configuration.tailCut ?? null,
    siblingPriority: configuration.siblingPriority === true,
    abandonAgreeing: abandonAgreeingFor(workload, configuration),
    abandonVerdict: configuration.abandonVerdict ?? 'either',
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
      currentStep = step;
      stepSkips = { skipped: 0, wouldKeep: 0 };
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
      const rolloutSeconds = (clock.now() - startedMs) / 1000;
      if (history !== null)
        for (const outcome of [...result.kept, ...result.dropped]) history.recordGroup(outcome, null);
      const problemOf = (outcome: (typeof result.kept)[number]) => {
        const problem = simulatedProblemIndex(outcome.problem.text) as number;
        return { problem, tokens: promptTokensOfDraw(problem) };
      };
      const boundTrajectories = (outcomes: typeof result.kept): BoundTrajectory[] => {
        const list: BoundTrajectory[] = [];
        for (const outcome of outcomes) {
          const { problem, tokens } = problemOf(outcome);
          for (const trajectory of outcome.trajectories) {
            const plan: TrajectoryPlan | undefined = policy.planOf(trajectory.id);
            if (plan !== undefined) list.push({ promptTokens: tokens, problem, plan });
          }
          // Abandoned members count for the work they did, not their whole plans.
          for (const trajectory of outcome.abandoned ?? []) {
            const plan: TrajectoryPlan | undefined = policy.planOf(trajectory.id);
            if (plan !== undefined)
              list.push({ promptTokens: tokens, problem, plan: planSoFar(plan, ranSoFar(trajectory)) });
          }
        }
        return list;
      };
      const kept = boundTrajectories(result.kept);
      keptTrajectories.push(kept);
      droppedTrajectories.push(boundTrajectories(result.dropped));
      // Would each group have been kept with every member run? Abandoned groups: a kept group
      // lost; the others check the estimate against what happened.
      const audit: AbandonAudit = {
        groupsAbandoned: 0,
        keptGroupsLost: 0,
        abandonedAllWrong: 0,
        keptGroupsLostAllWrong: 0,
        mispredicted: 0,
        checked: 0,
      };
      if (config.abandonAgreeing !== null) {
        for (const outcome of [...result.kept, ...result.dropped]) {
          if (outcome.dropReason === 'stale' || outcome.dropReason === 'rewards-missing') continue;
          const { problem, tokens } = problemOf(outcome);
          const members = Array.from({ length: workload.groupSize }, (_, sample) =>
            plans.planFor(problem, sample),
          );
          const wouldKeep = groupWouldBeKept(workload, tokens, members);
          if (outcome.dropReason === 'abandoned') {
            const allWrong = outcome.correct.every((correct) => correct !== true);
            audit.groupsAbandoned++;
            if (allWrong) audit.abandonedAllWrong++;
            if (wouldKeep) audit.keptGroupsLost++;
            if (wouldKeep && allWrong) audit.keptGroupsLostAllWrong++;
          } else {
            audit.checked++;
            if (wouldKeep !== outcome.kept) audit.mispredicted++;
          }
        }
      }
      audits.push(audit);
      const trainSeconds =
        (kept.reduce((sum, trajectory) => sum + trainedTokens(workload, trajectory), 0) * msPerTrainToken) /
        1000;
      const seconds = trainingOverlapped
        ? Math.max(rolloutSeconds, trainSeconds) + weightSyncSeconds
        : rolloutSeconds + trainSeconds + weightSyncSeconds;
      const after = totals(engines);
      figures.push({
        step,
        seconds,
        rolloutSeconds,
        trainSeconds,
        weightSyncSeconds,
        tokensGenerated: after.generatedTokens - before.generatedTokens,
        reprefillTokens: after.reprefillTokens - before.reprefillTokens,
        reprefillByCause: {
          preempted: after.reprefillPreemptedTokens - before.reprefillPreemptedTokens,
          moved: after.reprefillMovedTokens - before.reprefillMovedTokens,
          weightUpdate: after.reprefillWeightUpdateTokens - before.reprefillWeightUpdateTokens,
          evicted: after.reprefillEvictedTokens - before.reprefillEvictedTokens,
        },
        preemptions: after.preemptions - before.preemptions,
        hostLoadedTokens: after.hostLoadedTokens - before.hostLoadedTokens,
        busyFraction:
          rolloutSeconds > 0 ? (after.busyMs - before.busyMs) / 1000 / (rolloutSeconds * engines.length) : 0,
        busySeconds: {
          prefill: (after.prefillMs - before.prefillMs) / 1000,
          reprefill: (after.reprefillMs - before.reprefillMs) / 1000,
          decode: (after.busyMs - before.busyMs - (after.prefillMs - before.prefillMs)) / 1000,
        },
        decodeIterations: after.decodeIterations - before.decodeIterations,
        groupsKept: result.stats.groupsKept,
        trajectoriesFinished: result.stats.trajectoriesFinished,
        trajectoriesParked: result.stats.trajectoriesParked,
        trajectoriesStale: result.stats.trajectoriesStale,
        tailCut: result.stats.tailCut,
        groupsAbandoned: audit.groupsAbandoned,
        keptGroupsLost: audit.keptGroupsLost,
        problemsSkipped: stepSkips.skipped,
        skippedWouldKeep: stepSkips.wouldKeep,
        // Stretches still under way count up to now (their whole is reported when they end).
        kvOccupancyByTenth: occupancyByTenth(
          [...stretches, ...engines.flatMap((engine) => engine.stretchSoFar() ?? [])],
          startedMs,
          clock.now(),
          workload,
        ),
      });
      onProgress(
        `${configuration.name} step ${step}: ${seconds.toFixed(0)} s (rollout ${rolloutSeconds.toFixed(0)} s), ${result.stats.groupsKept} groups kept`,
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
  const perBatch = (seconds: number) =>
    groupsKept > 0 ? (seconds * workload.stepPrompts) / groupsKept : Number.POSITIVE_INFINITY;
  const batchSeconds = perBatch(totalSeconds);
  // The bound for the work kept: the counted steps' kept trajectories, per batch of groups.
  const keptCounted = (figures.length > 1 ? keptTrajectories.slice(1) : keptTrajectories).flat();
  const keptBound = stepBound(workload, keptCounted);
  const keptTrainSeconds =
    (keptCounted.reduce((sum, trajectory) => sum + trainedTokens(workload, trajectory), 0) *
      msPerTrainToken) /
    1000;
  const boundBatchSeconds =
    Math.max(perBatch(keptBound.workSeconds), keptBound.criticalPathSeconds, perBatch(keptTrainSeconds)) +
    weightSyncSeconds;
  const droppedCounted = (figures.length > 1 ? droppedTrajectories.slice(1) : droppedTrajectories).flat();
  const decidedBound = stepBound(workload, [...keptCounted, ...droppedCounted]);
  const boundDecidedBatchSeconds =
    Math.max(
      perBatch(decidedBound.workSeconds),
      decidedBound.criticalPathSeconds,
      perBatch(keptTrainSeconds),
    ) + weightSyncSeconds;
  const rolloutTotal = counted.reduce((sum, step) => sum + step.rolloutSeconds, 0);
  const auditsCounted = figures.length > 1 ? audits.slice(1) : audits;
  const auditTotal = (pick: (audit: AbandonAudit) => number) =>
    auditsCounted.reduce((sum, audit) => sum + pick(audit), 0);
  return {
    name: configuration.name,
    seed: workload.seed,
    maxPolicyLag,
    trainingOverlapped,
    stepSeconds,
    stepParts: {
      rolloutSeconds: meanOf((step) => step.rolloutSeconds),
      trainSeconds: meanOf((step) => step.trainSeconds),
      weightSyncSeconds,
    },
    groupsKept: groupsKept / counted.length,
    batchSeconds,
    boundBatchSeconds,
    batchOverBound: batchSeconds / boundBatchSeconds,
    boundDecidedBatchSeconds,
    speedup: null,
    batchSpeedup: null,
    tokensPerSecond:
      rolloutTotal > 0 ? counted.reduce((sum, step) => sum + step.tokensGenerated, 0) / rolloutTotal : 0,
    reprefillTokens: meanOf((step) => step.reprefillTokens),
    reprefillByCause: {
      preempted: meanOf((step) => step.reprefillByCause.preempted),
      moved: meanOf((step) => step.reprefillByCause.moved),
      weightUpdate: meanOf((step) => step.reprefillByCause.weightUpdate),
      evicted: meanOf((step) => step.reprefillByCause.evicted),
    },
    preemptions: meanOf((step) => step.preemptions),
    hostLoadedTokens: meanOf((step) => step.hostLoadedTokens),
    abandonment: {
      groupsAbandoned: auditTotal((audit) => audit.groupsAbandoned) / auditsCounted.length,
      keptGroupsLost: auditTotal((audit) => audit.keptGroupsLost) / auditsCounted.length,
      abandonedAllWrong: auditTotal((audit) => audit.abandonedAllWrong) / auditsCounted.length,
      keptGroupsLostAllWrong: auditTotal((audit) => audit.keptGroupsLostAllWrong) / auditsCounted.length,
      mispredicted: auditTotal((audit) => audit.mispredicted),
      checked: auditTotal((audit) => audit.checked),
    },
    skipping: {
      problemsSkipped: meanOf((step) => step.problemsSkipped),
      keptGroupsLost: meanOf((step) => step.skippedWouldKeep),
    },
    busyFraction: meanOf((step) => step.busyFraction),
    kvOccupancy: {
      body: meanOf((step) => averageOf(step.kvOccupancyByTenth.slice(0, 8))),
      tail: meanOf((step) => averageOf(step.kvOccupancyByTenth.slice(8))),
    },
    realSeconds: (performance.now() - realStarted) / 1000,
    steps: figures,
  };
}

/**
 * The rollout's `abandonAgreeing` for a configuration: its count of the paper's group of 8,
 * scaled to the workload's group size and kept below it.
 */
function abandonAgreeingFor(workload: Workload, configuration: SimConfiguration): number | null {
  if (configuration.abandonAgreeing === undefined) return null;
  const scaled = Math.round((configuration.abandonAgreeing * workload.groupSize) / 8);
  return Math.max(1, Math.min(workload.groupSize - 1, scaled));
}

function hostLoadPerTokenMs(workload: Workload, configuration: SimConfiguration): number {
  const ms = workload.costModel.hostLoadPerTokenMs;
  if (ms === undefined)
    throw new WorkloadInvalidError(
      `workload ${workload.name}: configuration ${configuration.name} needs costModel.hostLoadPerTokenMs (ms per token to load KV from host memory)`,
    );
  return ms;
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
