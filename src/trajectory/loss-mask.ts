import type { Trajectory } from './trajectory.ts';

/**
 * The per-token training view of a trajectory's response: token ids, loss mask (1 = model,
 * 0 = tool output) and logprobs (0 for tool tokens). Null for text-only trajectories.
 */
export function responseTokens(
  trajectory: Trajectory,
): { tokenIds: number[]; lossMask: number[]; logprobs: number[] } | null {
  const tokenIds: number[] = [];
  const lossMask: number[] = [];
  const logprobs: number[] = [];
  for (const segment of trajectory.segments) {
    if (segment.tokenIds === null) return null;
    tokenIds.push(...segment.tokenIds);
    if (segment.kind === 'model') {
      lossMask.push(...segment.tokenIds.map(() => 1));
      logprobs.push(...(segment.logprobs ?? segment.tokenIds.map(() => 0)));
    } else {
      lossMask.push(...segment.tokenIds.map(() => 0));
      logprobs.push(...segment.tokenIds.map(() => 0));
    }
  }
  return { tokenIds, lossMask, logprobs };
}
