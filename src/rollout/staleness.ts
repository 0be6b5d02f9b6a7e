/**
 * The staleness bound of partial rollout, pure: a trajectory whose oldest model segment was
 * produced more than `maxPolicyLag` policy versions before the current one is stale. A segment
 * without a numeric version is stale when `unversioned` says so (RL: its weights are unknown;
 * SGLang reports "default" until its first update, so an engine restarted mid-run serves the
 * initial weights under it), else it never makes a trajectory stale (an engine that never
 * versions its weights).
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
  unversioned: 'fresh' | 'stale' = 'fresh',
): boolean {
  const unknown = trajectory.segments.some(
    (segment) => segment.kind === 'model' && segment.policyVersion === null,
  );
  if (unknown && unversioned === 'stale') return true;
  const oldest = oldestPolicyVersion(trajectory);
  return oldest !== null && policyVersion - oldest > maxPolicyLag;
}
