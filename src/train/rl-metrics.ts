/**
 * One line of `metrics.jsonl` from a rollout step's groups and the GRPO step's statistics,
 * pure. Trajectory figures cover every finished trajectory of the step's decided groups (kept
 * and dropped), so accuracy and code frequency describe the policy, not only what was trained.
 */
import type { GroupOutcome, StepStats } from '../rollout/types.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import type { RlMetrics } from './rl-metrics-record.ts';
import type { GrpoStepResult } from './types.ts';

export type { RlMetrics };

export type RlMetricsInput = {
  step: number;
  policyVersion: number;
  groups: readonly GroupOutcome[];
  rollout: StepStats;
  /** Null when the step trained nothing (every group dropped). */
  train: GrpoStepResult | null;
  /** The trainer's policy version when the batch was trained (before the step's updates). */
  trainedAtVersion: number;
  timing: {
    rolloutMs: number;
    trainMs: number;
    weightSyncMs: number;
    engineIdleMs: number;
    trainerIdleMs: number;
  };
};

export function rlMetrics(input: RlMetricsInput): RlMetrics {
  const rewards: number[] = [];
  const trajectories: Trajectory[] = [];
  for (const group of input.groups) {
    group.trajectories.forEach((trajectory, index) => {
      trajectories.push(trajectory);
      const reward = group.rewards[index];
      if (reward !== null && reward !== undefined) rewards.push(reward);
    });
  }
  const graded = input.groups.flatMap((group) =>
    group.trajectories.filter((_, index) => (group.rewards[index] ?? null) !== null),
  );
  const correct = input.groups.reduce(
    (count, group) => count + group.correct.filter((verdict) => verdict === true).length,
    0,
  );
  const train = input.train;
  return {
    step: input.step,
    policyVersion: input.policyVersion,
    rewardMean: mean(rewards),
    accuracy: graded.length === 0 ? null : correct / graded.length,
    codeFrequency: share(trajectories, (trajectory) => trajectory.toolCalls.length > 0),
    codeCallsPerTrajectory: mean(trajectories.map((trajectory) => trajectory.toolCalls.length)),
    responseTokensMean: mean(trajectories.map(responseTokenCount)),
    truncationRate: input.rollout.truncationRate,
    selfCorrectionRate: share(trajectories, selfCorrected),
    groupsKept: input.rollout.groupsKept,
    groupsDropped: input.rollout.groupsDropped,
    clipFraction: train?.clipFraction ?? null,
    approxKl: train?.approxKlOld ?? null,
    entropy: train?.entropy ?? null,
    gradNorm: train?.gradNorm ?? null,
    offPolicyWeight: train?.offPolicyWeight ?? null,
    offPolicyCapped: train?.offPolicyCapped ?? null,
    rolloutLogprobGap: train?.logprobGap ?? null,
    staleLogprobGap: train?.staleLogprobGap ?? null,
    klRef: train?.klRef ?? null,
    updates: train?.updates ?? 0,
    ...input.timing,
    ...stalenessOf(
      input.groups.filter((group) => group.kept),
      input.trainedAtVersion,
    ),
    stage: input.rollout.stage,
    tokensSampled: input.rollout.tokensGenerated,
    tokensPerKeptGroup:
      input.rollout.groupsKept === 0 ? null : input.rollout.tokensGenerated / input.rollout.groupsKept,
    problemsSkipped: input.rollout.problemsSkipped ?? 0,
  };
}

/** Staleness of the trained model tokens: the trainer's version minus the segment's version. */
export function stalenessOf(
  kept: readonly GroupOutcome[],
  trainedAtVersion: number,
): Pick<RlMetrics, 'stalenessMax' | 'stalenessMean' | 'stalenessHistogram'> {
  const histogram: Record<string, number> = {};
  let tokens = 0;
  let weighted = 0;
  let max: number | null = null;
  for (const group of kept) {
    for (const trajectory of group.trajectories) {
      for (const segment of trajectory.segments) {
        if (segment.kind !== 'model' || segment.policyVersion === null) continue;
        const count = segment.tokenIds?.length ?? 0;
        if (count === 0) continue;
        const lag = trainedAtVersion - segment.policyVersion;
        histogram[String(lag)] = (histogram[String(lag)] ?? 0) + count;
        tokens += count;
        weighted += lag * count;
        max = max === null ? lag : Math.max(max, lag);
      }
    }
  }
  return {
    stalenessMax: max,
    stalenessMean: tokens === 0 ? null : weighted / tokens,
    stalenessHistogram: histogram,
  };
}

/** A failed code call (error, timeout, memory) followed later by a successful one. */
export function selfCorrected(trajectory: Trajectory): boolean {
  let failed = false;
  for (const call of trajectory.toolCalls) {
    if (call.outcome.status === 'ok' && failed) return true;
    if (call.outcome.status !== 'ok') failed = true;
  }
  return false;
}

/** Model-generated tokens (token ids where present, else characters of model text). */
function responseTokenCount(trajectory: Trajectory): number {
  let count = 0;
  for (const segment of trajectory.segments) {
    if (segment.kind !== 'model') continue;
    count += segment.tokenIds?.length ?? segment.text.length;
  }
  return count;
}

function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((sum, value) => sum + value, 0) / values.length;
}

function share<T>(items: readonly T[], predicate: (item: T) => boolean): number | null {
  return items.length === 0 ? null : items.filter(predicate).length / items.length;
}
