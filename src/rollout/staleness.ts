/**
 * The staleness bound of partial rollout, pure: a trajectory whose oldest model segment was
 * produced more than `maxPolicyLag` policy versions before the current one is stale. Segments
 * without a version (engines that do not report one) never make a trajectory stale.
 */
import type { Trajectory } from '../trajectory/trajectory.ts';

/** The oldest policy version among the model segments, or null. */
export function oldestPolicyVersion(trajectory: Pick<Trajectory, 'segments'>): number | null {
  let oldest: number | null = null;
  for (const segment of trajectory.segments) {
    if (segment.kind !== 'model' || segment.policyVersion === null) continue;
    if (oldest === null || segment.policyVersion < oldest) oldest = segment.policyVersion;
  }
  return oldest;
}

export function isStale(
  trajectory: Pick<Trajectory, 'segments'>,
  policyVersion: number,
  maxPolicyLag: number,
): boolean {
  const oldest = oldestPolicyVersion(trajectory);
  return oldest !== null && policyVersion - oldest > maxPolicyLag;
}
