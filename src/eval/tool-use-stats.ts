/**
 * Tool-use and length statistics over finished trajectories (pure functions).
 *
 * A code call "fails" when its outcome is anything but `ok` (a Python exception, a timeout,
 * the memory limit, a killed session). A trajectory "self-corrects" when some failed call is
 * followed later in it by a successful one; the rate is over trajectories with a failed call.
 * Response length counts model and tool segments: tokens when every trajectory carries token
 * ids, characters otherwise (text-only engines).
 */

import { percentile as nearestRank } from '../shared/percentile.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';

export type ToolUseStats = {
  trajectories: number;
  /** All code calls made. */
  codeCalls: number;
  /** Mean code calls per trajectory. */
  codeCallsPerTrajectory: number;
  /** Share of trajectories with at least one code call. */
  codeUsageRate: number;
  /** Failed calls over all calls (0 when there were no calls). */
  codeErrorRate: number;
  trajectoriesWithError: number;
  selfCorrected: number;
  /** selfCorrected / trajectoriesWithError, or null when no trajectory had a failed call. */
  selfCorrectionRate: number | null;
};

export type LengthStats = {
  unit: 'tokens' | 'chars';
  mean: number;
  p50: number;
  p90: number;
  max: number;
};

/** Code-call statistics of a set of trajectories. */
export function toolUseStats(trajectories: readonly Trajectory[]): ToolUseStats {
  let codeCalls = 0;
  let failedCalls = 0;
  let usingCode = 0;
  let trajectoriesWithError = 0;
  let selfCorrected = 0;
  for (const trajectory of trajectories) {
    const outcomes = trajectory.toolCalls.map((call) => call.outcome.status);
    codeCalls += outcomes.length;
    if (outcomes.length > 0) usingCode++;
    const firstFailure = outcomes.findIndex((status) => status !== 'ok');
    if (firstFailure === -1) continue;
    failedCalls += outcomes.filter((status) => status !== 'ok').length;
    trajectoriesWithError++;
    if (outcomes.slice(firstFailure + 1).includes('ok')) selfCorrected++;
  }
  const count = trajectories.length;
  return {
    trajectories: count,
    codeCalls,
    codeCallsPerTrajectory: count === 0 ? 0 : codeCalls / count,
    codeUsageRate: count === 0 ? 0 : usingCode / count,
    codeErrorRate: codeCalls === 0 ? 0 : failedCalls / codeCalls,
    trajectoriesWithError,
    selfCorrected,
    selfCorrectionRate: trajectoriesWithError === 0 ? null : selfCorrected / trajectoriesWithError,
  };
}

/** Whether every segment of every trajectory carries token ids. */
export function lengthUnit(trajectories: readonly Trajectory[]): 'tokens' | 'chars' {
  const allTokens = trajectories.every((trajectory) =>
    trajectory.segments.every((segment) => segment.tokenIds !== null),
  );
  return trajectories.length > 0 && allTokens ? 'tokens' : 'chars';
}

/** Response length of one trajectory in the given unit (model and tool segments). */
export function responseLength(trajectory: Trajectory, unit: 'tokens' | 'chars'): number {
  let total = 0;
  for (const segment of trajectory.segments) {
    total += unit === 'tokens' ? (segment.tokenIds?.length ?? 0) : segment.text.length;
  }
  return total;
}

/** Mean, median, 90th percentile and maximum of response lengths. */
export function lengthStats(trajectories: readonly Trajectory[]): LengthStats {
  const unit = lengthUnit(trajectories);
  const values = trajectories.map((trajectory) => responseLength(trajectory, unit)).sort((a, b) => a - b);
  if (values.length === 0) return { unit, mean: 0, p50: 0, p90: 0, max: 0 };
  const sum = values.reduce((total, value) => total + value, 0);
  return {
    unit,
    mean: sum / values.length,
    p50: percentile(values, 0.5),
    p90: percentile(values, 0.9),
    max: values[values.length - 1] ?? 0,
  };
}

/** Nearest-rank percentile of sorted values; 0 for none (a run with no trajectories). */
export function percentile(sorted: readonly number[], fraction: number): number {
  return sorted.length === 0 ? 0 : nearestRank(sorted, fraction);
}

/** How many trajectories ended for each reason (`unfinished` for a null finish). */
export function finishReasonCounts(trajectories: readonly Trajectory[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const trajectory of trajectories) {
    const reason = trajectory.finish?.reason ?? 'unfinished';
    counts[reason] = (counts[reason] ?? 0) + 1;
  }
  return counts;
}
