/**
 * One rollout step. Every trajectory is its own task (request-level scheduling): while one
 * waits on its sandbox or the engine, the others go on; the router bounds requests in flight
 * per replica. With partial rollout a trajectory runs one segment per step (at most L_seg new
 * tokens and T_seg tool calls) and parks; parked trajectories are resumed first in the next
 * step. Finished groups are graded and decided at once: all-equal groups are dropped and fresh
 * problems back-fill the batch (with `overProvision` extra groups in flight so a drop does not
 * cost a round). Once `batchSize` groups are kept no new work starts: running trajectories are
 * paused (the agent loop's resumable pause keeps the engine's partial tokens), those that have
 * not begun their segment keep their place, and undecided groups carry into the next step.
 * With `kvBudgetTokens` a segment starts only while the KV that active trajectories hold fits
 * the budget (`KvBudget`); with `tailCut` the step also ends that way once that KV has fallen
 * below the fraction of its peak with nothing left to start (the tail of a step, where the
 * replicas' batches run nearly empty). With `siblingPriority` the budget's queue is ordered by
 * what a group's finished members say (known kept first, likely dropped last, longest expected
 * first within a class); with `abandonAgreeing` m, once m finished members of a group agree its
 * unfinished members are stopped (cut like a pause, their sessions closed) and the group is
 * dropped as `abandoned`.
 *
 * `mode: 'sync'` is the static synchronous baseline on the same code: groups start in rounds
 * of the missing batch size, every trajectory of a round issues its turn together (a
 * `TurnBarrier` in front of the engine), and the next round starts when the last one ends.
 *
 * Waits and measurements go through `parts.clock`; nothing here reads the wall clock.
 */

import type { AgentOptions } from '../agent/agent-options.ts';
import { resumeAgent, runAgent } from '../agent/run-agent.ts';
import { ConcurrencyLimiter } from '../engine/concurrency-limiter.ts';
import type { Engine } from '../engine/types.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import { nextStageIndex, segmentLimits, truncationRate } from './budget-stages.ts';
import { type AdvantageScale, groupAdvantages } from './group-advantages.ts';
import { groupDropReason } from './group-filter.ts';
import { KvBudget, type KvHold } from './kv-budget.ts';
import { formatFaultCount, resampleOnCorrect, stringDraw, toolErrorCount } from './resample-on-correct.ts';
import type { RolloutConfig } from './rollout-config.ts';
import { isStale, oldestPolicyVersion } from './staleness.ts';
import { rewardOrMissing } from './trajectory-reward.ts';
import { barrierEngine, barrierSandbox, TurnBarrier } from './turn-barrier.ts';
import type {
  GroupOutcome,
  ParkedGroup,
  ReplicaStepStats,
  Reward,
  RolloutParts,
  RolloutProblem,
  RolloutState,
  RolloutStepInput,
  RolloutStepResult,
} from './types.ts';

/** The state before the first step. */
export function initialRolloutState(): RolloutState {
  return { stage: 0, parked: [] };
}

/** A group being worked on in this step. Slot = one trajectory (null: not started yet). */
type GroupRun = {
  problem: RolloutProblem;
  startedStep: number;
  slots: (Trajectory | null)[];
  /** Slots whose segment is still running or waiting to run this step. */
  pending: number;
  stale: boolean;
  decided: boolean;
  /** Stopped by early abandonment (`abandonAgreeing`): decided as dropped once no member runs. */
  abandoned: boolean;
  /** Fired on abandonment: cuts the running members' segments as a pause does. */
  abandon: AbortController;
  /** What the members' agent loops pause on: the step's pause, and the group's abandonment. */
  pauseSignal: AbortSignal;
  /** Finished members graded correct and wrong (a missing grade counts in neither). */
  finishedCorrect: number;
  finishedWrong: number;
  /** The longest context of a finished member (tokens): the expected length of the others. */
  longestFinished: number;
};

type Counters = {
  finished: Trajectory[];
  parked: number;
  resumed: number;
  backfilled: number;
  stale: number;
  rewardsMissing: number;
  tokens: number;
  toolCalls: number;
  groupsAbandoned: number;
  trajectoriesAbandoned: number;
};

/** Runs one step; see the module comment. */
export async function runRolloutStep(
  input: RolloutStepInput,
  parts: RolloutParts,
): Promise<RolloutStepResult> {
  const { step, policyVersion, config, problems } = input;
  const { clock } = parts;
  const started = clock.now();
  const replicasBefore = parts.engine.replicaStats?.() ?? {};
  const stageIndex = Math.min(input.state.stage, config.stages.length - 1);
  const stage = config.stages[stageIndex] as RolloutConfig['stages'][number];
  const limits = segmentLimits(stage, config);
  const budgets = {
    maxTotalTokens: stage.maxTokens,
    maxToolCalls: stage.maxToolCalls,
    maxNewTokensPerTurn: Math.min(config.maxNewTokensPerTurn, stage.maxTokens),
    ...(config.partialRollout
      ? { segment: { maxTokens: limits.tokens, maxToolCalls: limits.toolCalls } }
      : {}),
  };
  const createId = parts.createId ?? randomIds(parts.random, step);
  const counters: Counters = {
    finished: [],
    parked: 0,
    resumed: 0,
    backfilled: 0,
    stale: 0,
    rewardsMissing: 0,
    tokens: 0,
    toolCalls: 0,
    groupsAbandoned: 0,
    trajectoriesAbandoned: 0,
  };
  const kept: GroupOutcome[] = [];
  const dropped: GroupOutcome[] = [];
  const limiter = new ConcurrencyLimiter(config.maxActiveTrajectories);
  const kvBudget = config.kvBudgetTokens === null ? null : new KvBudget(config.kvBudgetTokens);
  const interrupted = () => parts.signal?.aborted === true;
  // Fired when the batch is full: running trajectories pause (resumable) and carry over.
  const pause = new AbortController();
  const asyncLane: Lane = { engine: parts.engine, leave: () => {} };
  let batchFull = false;
  // Set when the tail cut (`tailCut`) ended the step early.
  let tailCut = false;
  // Whether the step may still start fresh groups (the async loop sets it).
  let mayStartMore = () => false;
  let peakHeld = 0;
  // Slots between launch and their KV hold (queued for the active-trajectory limit or the budget).
  let starting = 0;

  const decide = (group: GroupRun): void => {
    group.decided = true;
    if (group.abandoned) {
      // Members that never ran this step still hold their parked sessions.
      for (const slot of group.slots) if (slot !== null && !isFinished(slot)) closeQuietly(parts, slot.id);
      counters.groupsAbandoned++;
      // Members left unfinished, started or not.
      counters.trajectoriesAbandoned += group.slots.filter((slot) => !isFinished(slot)).length;
    }
    const outcome = decideGroup(group, step, kept.length >= config.batchSize, config);
    if (outcome === null) return; // beyond the batch: carried over, decided next step
    (outcome.kept ? kept : dropped).push(outcome);
    parts.onEvent?.({ type: 'group-decide', group: outcome });
    if (kept.length >= config.batchSize && !batchFull) {
      batchFull = true;
      pause.abort();
    }
  };

  const agentOptions = (lane: Lane, sample: number, group: GroupRun): AgentOptions => ({
    ...input.agent,
    ...(input.agent?.sampling?.seed === undefined
      ? {}
      : {
          sampling: {
            ...input.agent.sampling,
            seed: trajectorySeed(input.agent.sampling.seed, group, sample),
          },
        }),
    budgets,
    engine: lane.engine,
    tokenizer: parts.tokenizer,
    sandbox: lane.sandbox ?? parts.sandbox,
    dialect: parts.dialect,
    park: parts.park,
    sample,
    step,
    clock,
    pause: group.pauseSignal,
    createId,
    ...(parts.prompt === undefined ? {} : { prompt: parts.prompt }),
    ...(parts.signal === undefined ? {} : { signal: parts.signal }),
  });

  /** Runs one segment of slot `index`, then grades or parks it. */
  const runSlot = async (group: GroupRun, index: number, lane: Lane): Promise<void> => {
    try {
      // Not begun when the batch filled up: the slot stays as it is and carries over.
      if (group.stale || group.abandoned || batchFull || tailCut || interrupted()) return;
      const before = group.slots[index] ?? null;
      const problemForAgent = { id: group.problem.id, text: group.problem.text };
      let trajectory: Trajectory;
      if (before === null) {
        trajectory = await runAgent(problemForAgent, agentOptions(lane, index, group));
      } else {
        counters.resumed++;
        trajectory = await resumeAgent(before, agentOptions(lane, before.sample, group));
      }
      // Cut by the caller's interrupt (Ctrl-C): not a result. Nothing is recorded or graded and
      // the slot keeps what it had; the step is not committed, so a resume redoes it.
      if (interrupted() && trajectory.finish?.reason === 'aborted') return;
      const fresh = stampStep(trajectory, before, step);
      counters.tokens += fresh.tokens;
      counters.toolCalls += fresh.toolCalls;
      if (!isFinished(trajectory)) {
        group.slots[index] = trajectory;
        // Cut by its group's abandonment: not parked, its session closed.
        if (group.abandoned) {
          closeQuietly(parts, trajectory.id);
          return;
        }
        counters.parked++;
        parts.onEvent?.({ type: 'trajectory-park', step, trajectory });
        return;
      }
      const graded = await gradeOnce(trajectory, group.problem);
      group.slots[index] = graded.trajectory;
      noteFinished(group, graded.trajectory);
      counters.finished.push(graded.trajectory);
      if (graded.reward === null) counters.rewardsMissing++;
      parts.onEvent?.({
        type: 'trajectory-finish',
        step,
        trajectory: graded.trajectory,
        reward: graded.reward,
      });
      abandonIfAgreeing(group);
      // A sibling's verdict changes the order of the budget's queue.
      if (config.siblingPriority) kvBudget?.reorder();
    } finally {
      lane.leave();
      group.pending--;
      if (group.pending === 0 && !group.decided && (group.abandoned || group.slots.every(isFinished)))
        decide(group);
    }
  };

  /**
   * Early abandonment: once `abandonAgreeing` finished members agree (all wrong, with
   * `abandonVerdict` `wrong`) while others are unfinished, the others stop (running ones are cut as by a pause, waiting ones do not start)
   * and the group is decided as dropped when none of them runs any more.
   */
  const abandonIfAgreeing = (group: GroupRun): void => {
    const least = config.abandonAgreeing;
    if (least === null || group.abandoned || group.decided || group.stale) return;
    if (group.finishedCorrect > 0 && group.finishedWrong > 0) return;
    const agreeing =
      config.abandonVerdict === 'wrong'
        ? group.finishedCorrect > 0
          ? 0
          : group.finishedWrong
        : Math.max(group.finishedCorrect, group.finishedWrong);
    if (agreeing < least) return;
    if (group.slots.every(isFinished)) return;
    group.abandoned = true;
    group.abandon.abort();
  };

  /**
   * The admission rank of a member waiting for the KV budget (`siblingPriority`): its group's
   * class (0 known kept, 1 fewer than two finished, 2 finished members all agree), then the
   * longest expected first.
   */
  const siblingRank = (group: GroupRun, ownTokens: number) => (): readonly number[] => {
    const finished = group.finishedCorrect + group.finishedWrong;
    const rank = group.finishedCorrect > 0 && group.finishedWrong > 0 ? 0 : finished < 2 ? 1 : 2;
    return [rank, -Math.max(ownTokens, group.longestFinished)];
  };

  const gradeOnce = async (
    trajectory: Trajectory,
    problem: RolloutProblem,
  ): Promise<{ trajectory: Trajectory; reward: Reward }> => {
    let correct: boolean | null = null;
    let reason: string | null = null;
    if (trajectory.finish?.reason === 'error' || trajectory.finish?.reason === 'aborted') {
      reason = trajectory.finish.error?.code ?? trajectory.finish.reason;
    } else {
      for (let attempt = 0; attempt < config.gradeAttempts && correct === null; attempt++) {
        try {
          const grade = await parts.grade(trajectory, problem);
          correct = grade.correct;
          if (correct === null) reason = 'grader-unavailable';
        } catch (error) {
          reason = `grader-error: ${(error as Error).message}`;
        }
      }
    }
    const reward = rewardOrMissing(correct, trajectory, config.reward, config.rewardKind);
    return {
      reward,
      trajectory: {
        ...trajectory,
        meta: {
          ...trajectory.meta,
          reference: problem.answer,
          correct,
          reward,
          ...(reward === null ? { missingReason: reason } : {}),
        },
      },
    };
  };

  // Mean model tokens per engine call so far this step: how much a context grows by its next call.
  const calls = { count: 0, tokens: 0 };
  const expectedGrowth = () => (calls.count === 0 ? 0 : calls.tokens / calls.count);

  /** KV tokens a trajectory is counted for: its context so far plus what its next call adds on average. */
  const kvWeight = (trajectory: Trajectory | null, problem: RolloutProblem): number => {
    // A fresh trajectory's prompt: its token count where a tokenizer is at hand, else its bytes.
    const context =
      trajectory === null
        ? (parts.tokenizer?.encode(problem.text).length ?? Buffer.byteLength(problem.text))
        : contextTokens(trajectory);
    return context + expectedGrowth();
  };

  /**
   * The tail cut: once the KV that running trajectories hold has fallen below `tailCut` of its
   * peak this step, with nothing waiting to start, the replicas no longer have the work to fill
   * their batches; the running trajectories pause (as when the batch is full) and carry over.
   */
  const checkTail = (): void => {
    if (config.tailCut === null || kvBudget === null || batchFull || tailCut) return;
    peakHeld = Math.max(peakHeld, kvBudget.held);
    if (kvBudget.holders === 0 || starting > 0 || mayStartMore()) return;
    if (kvBudget.held >= config.tailCut * peakHeld) return;
    tailCut = true;
    pause.abort();
  };

  /** The lane's engine, with the slot's KV hold resized after every call to the context it reached. */
  const meteredLane = (lane: Lane, hold: KvHold): Lane => ({
    ...lane,
    engine: {
      name: lane.engine.name,
      generate: async (request, signal) => {
        const result = await lane.engine.generate(request, signal);
        const made = result.tokenIds?.length ?? 0;
        calls.count++;
        calls.tokens += made;
        hold.resize(request.promptTokenIds.length + made + expectedGrowth());
        checkTail();
        return result;
      },
    },
  });

  /** A member's KV hold; an abandoned group's waiting members leave the queue at once. */
  const admit = (budget: KvBudget, group: GroupRun, weight: number): Promise<KvHold> =>
    budget.acquire(weight, {
      ...(config.siblingPriority ? { priority: siblingRank(group, weight) } : {}),
      signal: group.abandon.signal,
    });

  /** Starts every runnable slot of a group (each its own task); returns when all are done. */
  const runGroup = async (group: GroupRun, lane: Lane): Promise<void> => {
    const runnable = group.slots.flatMap((slot, index) => (isFinished(slot) ? [] : [index]));
    group.pending = runnable.length;
    if (runnable.length === 0) {
      if (!group.decided) decide(group);
      return;
    }
    await Promise.all(
      runnable.map(async (index) => {
        starting++;
        // A synchronous round runs whole (its barrier waits for every member), so no limiter.
        const release = config.mode === 'sync' ? () => {} : await limiter.acquire();
        const hold =
          kvBudget === null || config.mode === 'sync'
            ? null
            : await admit(kvBudget, group, kvWeight(group.slots[index] ?? null, group.problem));
        starting--;
        // Not a moment to cut: a trajectory just admitted holds little yet (its prompt), and the
        // KV held only rose. The cut is checked where it falls (a call's end, a release).
        if (kvBudget !== null) peakHeld = Math.max(peakHeld, kvBudget.held);
        try {
          await runSlot(group, index, hold === null ? lane : meteredLane(lane, hold));
        } finally {
          hold?.release();
          release();
          // The group's last slot: the launch loop checks once fresh groups had their chance to start.
          if (group.pending > 0) checkTail();
        }
      }),
    );
  };

  // Carried groups first: staleness, then their parked trajectories resume before any fresh work.
  // Every member counts, finished ones too (a kept group deferred past a full batch, the
  // finished siblings of an unfinished one). `restart` starts the whole group afresh: replacing
  // only the stale members would replace the long trajectories and keep the short ones.
  const carried: GroupRun[] = input.state.parked.map((parked) => {
    const group = fromParked(parked, pause.signal, config.abandonAgreeing !== null);
    if (
      !group.slots.some(
        (slot) => slot !== null && isStale(slot, policyVersion, config.maxPolicyLag, config.unversioned),
      )
    ) {
      return group;
    }
    // Every member is restarted or dropped with the group.
    counters.stale += group.slots.filter((slot) => slot !== null).length;
    if (config.stalePolicy === 'drop') {
      group.stale = true;
      return group;
    }
    for (const [index, slot] of group.slots.entries()) {
      if (slot === null) continue;
      closeQuietly(parts, slot.id);
      group.slots[index] = null;
    }
    // The members thrown away no longer speak for the group (abandonment, sibling order).
    group.finishedCorrect = 0;
    group.finishedWrong = 0;
    group.longestFinished = 0;
    return group;
  });
  const groups: GroupRun[] = [...carried];
  for (const group of carried) {
    if (group.stale) {
      for (const slot of group.slots) if (slot !== null) closeQuietly(parts, slot.id);
      decide(group);
    } else {
      abandonIfAgreeing(group);
    }
  }

  let exhausted = false;
  const freshGroup = (): GroupRun | null => {
    if (exhausted) return null;
    const problem = problems.next();
    if (problem === null) {
      exhausted = true;
      return null;
    }
    const group = newGroupRun(
      problem,
      step,
      new Array(sampledGroupSize(config)).fill(null),
      pause.signal,
      config.abandonAgreeing !== null,
    );
    groups.push(group);
    return group;
  };
  const undecided = () => groups.filter((group) => !group.decided).length;

  if (config.mode === 'async') {
    // Each group is a task; a finished group frees room for a fresh one (back-fill).
    const target = config.batchSize + config.overProvision;
    const running = new Set<Promise<void>>();
    let initialDone = false;
    const launch = (group: GroupRun, backfill: boolean): void => {
      if (backfill) counters.backfilled++;
      const task: Promise<void> = runGroup(group, asyncLane).then(() => {
        running.delete(task);
        topUp(initialDone);
        checkTail();
      });
      running.add(task);
    };
    // Parked groups hold back fresh ones unless `fillBatch`: then only running groups count, and
    // fresh groups start until B groups are decided (a partial-rollout step trains on a full
    // batch), while the undecided pool stays within N batches (N = the stage's partial
    // rollouts), so a step does not run ahead on work that later steps would only drain.
    const poolLimit = target * stage.partialRollouts;
    const room = config.fillBatch
      ? () => kept.length + running.size < target && undecided() < poolLimit
      : () => kept.length + undecided() < target;
    mayStartMore = () => !exhausted && !interrupted() && room();
    const topUp = (backfill: boolean): void => {
      while (!batchFull && !tailCut && !interrupted() && room()) {
        const group = freshGroup();
        if (group === null) return;
        launch(group, backfill);
      }
    };
    for (const group of carried) if (!group.decided) launch(group, false);
    topUp(false);
    initialDone = true;
    while (running.size > 0) await Promise.race(running);
  } else {
    // Static synchronous rounds: carried groups and the missing batch together, turn by turn.
    // Undecided groups of earlier rounds (parked this step) count towards the batch.
    let round = carried.filter((group) => !group.decided);
    let first = true;
    for (;;) {
      while (!batchFull && !interrupted() && kept.length + undecided() < config.batchSize) {
        const group = freshGroup();
        if (group === null) break;
        if (!first) counters.backfilled++;
        round.push(group);
      }
      if (round.length === 0) break;
      const barrier = new TurnBarrier();
      barrier.join(
        round.reduce((sum, group) => sum + group.slots.filter((slot) => !isFinished(slot)).length, 0),
      );
      const lane: Lane = {
        engine: barrierEngine(parts.engine, barrier),
        sandbox: barrierSandbox(parts.sandbox, barrier),
        leave: () => barrier.leave(),
      };
      await Promise.all(round.map((group) => runGroup(group, lane)));
      first = false;
      round = [];
    }
  }

  const parked = groups.filter((group) => !group.decided).map(toParked);
  const rate = truncationRate(counters.finished);
  const stats = {
    step,
    wallMs: clock.now() - started,
    mode: config.mode,
    router: parts.routerName,
    trajectoriesFinished: counters.finished.length,
    trajectoriesParked: counters.parked,
    trajectoriesResumed: counters.resumed,
    groupsKept: kept.length,
    groupsDropped: dropped.length,
    groupsBackfilled: counters.backfilled,
    groupsCarried: parked.length,
    tailCut,
    groupsAbandoned: counters.groupsAbandoned,
    trajectoriesAbandoned: counters.trajectoriesAbandoned,
    trajectoriesStale: counters.stale,
    rewardsMissing: counters.rewardsMissing,
    truncationRate: rate,
    tokensGenerated: counters.tokens,
    toolCalls: counters.toolCalls,
    stage: stageIndex,
    replicas: replicaDelta(replicasBefore, parts.engine.replicaStats?.() ?? {}),
  };
  const nextStage = nextStageIndex({
    stage: stageIndex,
    truncationRate: rate,
    threshold: config.truncationThreshold,
    stageCount: config.stages.length,
  });
  return { kept, dropped, state: { stage: nextStage, parked }, stats };
}

/** The engine a slot's segment uses, and what it does when the segment is over. */
/** What a trajectory runs on: the engine and sandbox as its scheduling sees them. */
type Lane = { engine: Engine; sandbox?: SandboxProvider; leave: () => void };

function closeQuietly(parts: RolloutParts, trajectoryId: string): void {
  parts.park
    .take(trajectoryId)
    ?.close()
    .catch(() => {});
}

/** Finished for good: not unstarted, not stopped at its segment budget, not paused. */
function isFinished(slot: Trajectory | null): boolean {
  const reason = slot?.finish?.reason;
  return reason !== undefined && reason !== 'segment-budget' && reason !== 'paused';
}

function fromParked(parked: ParkedGroup, pause: AbortSignal, abandonable: boolean): GroupRun {
  const group = newGroupRun(
    parked.problem,
    parked.startedStep,
    [...parked.trajectories] as (Trajectory | null)[],
    pause,
    abandonable,
  );
  for (const slot of group.slots) if (slot !== null && isFinished(slot)) noteFinished(group, slot);
  return group;
}

/** A group to work on; its members pause on the step's `pause`, and on its abandonment when `abandonable`. */
function newGroupRun(
  problem: RolloutProblem,
  startedStep: number,
  slots: (Trajectory | null)[],
  pause: AbortSignal,
  abandonable: boolean,
): GroupRun {
  const abandon = new AbortController();
  return {
    problem,
    startedStep,
    slots,
    pending: 0,
    stale: false,
    decided: false,
    abandoned: false,
    abandon,
    pauseSignal: abandonable ? AbortSignal.any([pause, abandon.signal]) : pause,
    finishedCorrect: 0,
    finishedWrong: 0,
    longestFinished: 0,
  };
}

/** Counts a finished member's verdict and length into its group's summary. */
function noteFinished(group: GroupRun, trajectory: Trajectory): void {
  const correct = trajectory.meta?.correct;
  if (correct === true) group.finishedCorrect++;
  else if (correct === false) group.finishedWrong++;
  group.longestFinished = Math.max(group.longestFinished, contextTokens(trajectory));
}

/** A parked group: unstarted slots keep their place as a trajectory-less entry (see `ParkedGroup`). */
function toParked(group: GroupRun): ParkedGroup {
  return { problem: group.problem, startedStep: group.startedStep, trajectories: [...group.slots] };
}

/**
 * A seeded run gives each trajectory its own seed from the run's seed, its group (problem and
 * the step the group started in) and its sample index, so a rerun draws the same tokens
 * whatever runs beside it, and a resumed trajectory keeps its seed.
 */
function trajectorySeed(seed: number, group: GroupRun, sample: number): number {
  let hash = 2166136261 ^ seed;
  for (const character of `${group.problem.id}\u0000${group.startedStep}\u0000${sample}`) {
    hash = Math.imul(hash ^ character.charCodeAt(0), 16777619);
  }
  return (hash >>> 0) & 0x7fffffff;
}

/** Members a group samples: n, or round(K · n) with resample-on-correct. */
export function sampledGroupSize(config: Pick<RolloutConfig, 'groupSize' | 'resampleOnCorrect'>): number {
  return Math.max(config.groupSize, Math.round(config.resampleOnCorrect * config.groupSize));
}

/** The group's outcome, or null when the batch is already full and a kept group must wait. */
function decideGroup(
  group: GroupRun,
  step: number,
  batchFull: boolean,
  config: Pick<RolloutConfig, 'groupSize' | 'resampleOnCorrect' | 'advantageScale'>,
): GroupOutcome | null {
  const advantageScale: AdvantageScale = config.advantageScale;
  let trajectories = group.slots.filter(
    (slot): slot is Trajectory => slot !== null && (!group.abandoned || isFinished(slot)),
  );
  let resampled: GroupOutcome['resampled'];
  if (!group.abandoned && !group.stale && trajectories.length > config.groupSize) {
    const members = trajectories.map((trajectory) => ({
      correct: (trajectory.meta?.correct ?? null) as boolean | null,
      toolErrors: toolErrorCount(trajectory),
      formatFaults: formatFaultCount(trajectory),
      // Fixed by the group and the sample, not the trajectory's id: a resumed step draws the same.
      draw: stringDraw(`${group.problem.id}\u0000${group.startedStep}\u0000${trajectory.sample}`),
    }));
    const choice = resampleOnCorrect(members, config.groupSize);
    resampled = {
      sampled: trajectories.length,
      discarded: choice.discarded.map(({ index, reason }) => ({
        id: (trajectories[index] as Trajectory).id,
        reason,
        correct: (members[index] as (typeof members)[number]).correct,
        toolErrors: (members[index] as (typeof members)[number]).toolErrors,
        formatFaults: (members[index] as (typeof members)[number]).formatFaults,
      })),
    };
    const all = trajectories;
    trajectories = choice.keep.map((index) => all[index] as Trajectory);
  }
  const rewards = trajectories.map((trajectory) => (trajectory.meta?.reward ?? null) as Reward);
  const correct = trajectories.map((trajectory) => (trajectory.meta?.correct ?? null) as boolean | null);
  const dropReason = group.abandoned ? 'abandoned' : groupDropReason({ correct, stale: group.stale });
  if (dropReason === null && batchFull) {
    group.decided = false;
    return null;
  }
  return {
    step,
    problem: group.problem,
    trajectories,
    rewards,
    correct,
    oldestPolicyVersion: groupOldestPolicyVersion(trajectories),
    advantages:
      dropReason === null ? groupAdvantages(rewards, { scale: advantageScale }) : rewards.map(() => null),
    kept: dropReason === null,
    dropReason,
    ...(resampled === undefined ? {} : { resampled }),
    ...(group.abandoned
      ? {
          abandoned: group.slots.filter((slot): slot is Trajectory => slot !== null && !isFinished(slot)),
        }
      : {}),
  };
}

/** The oldest policy version any member's model segments came from (null when none says). */
function groupOldestPolicyVersion(trajectories: readonly Trajectory[]): number | null {
  const versions = trajectories.flatMap((trajectory) => {
    const oldest = oldestPolicyVersion(trajectory);
    return oldest === null ? [] : [oldest];
  });
  return versions.length === 0 ? null : Math.min(...versions);
}

/** Writes the step on the model segments this step added; returns what was added. */
function stampStep(
  trajectory: Trajectory,
  before: Trajectory | null,
  step: number,
): { tokens: number; toolCalls: number } {
  const from = before?.segments.length ?? 0;
  let tokens = 0;
  for (const segment of trajectory.segments.slice(from)) {
    if (segment.kind !== 'model') continue;
    if (segment.step === null) segment.step = step;
    tokens += segment.tokenIds?.length ?? 0;
  }
  return { tokens, toolCalls: trajectory.toolCalls.length - (before?.toolCalls.length ?? 0) };
}

function replicaDelta(
  before: Record<string, ReplicaStepStats>,
  after: Record<string, ReplicaStepStats>,
): Record<string, ReplicaStepStats> {
  return Object.fromEntries(
    Object.entries(after).map(([name, now]) => {
      const then = before[name];
      const cached =
        now.cachedTokens === undefined ? {} : { cachedTokens: now.cachedTokens - (then?.cachedTokens ?? 0) };
      return [
        name,
        {
          requests: now.requests - (then?.requests ?? 0),
          promptTokens: now.promptTokens - (then?.promptTokens ?? 0),
          ...cached,
        },
      ];
    }),
  );
}

function randomIds(random: () => number, step: number): () => string {
  let counter = 0;
  return () => {
    counter++;
    const salt = Math.floor(random() * 0x1_0000_0000)
      .toString(16)
      .padStart(8, '0');
    return `s${step}-${counter}-${salt}`;
  };
}

function contextTokens(trajectory: Trajectory): number {
  return (
    (trajectory.prompt.tokenIds?.length ?? trajectory.prompt.text.length) +
    trajectory.segments.reduce(
      (total, segment) => total + (segment.tokenIds?.length ?? segment.text.length),
      0,
    )
  );
}
