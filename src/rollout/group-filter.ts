/**
 * Which groups carry a GRPO signal, pure. A group whose present rewards are all equal has zero
 * advantages everywhere and is dropped: `all-correct` when those rewards are correct answers,
 * `all-wrong` otherwise. A group holding a trajectory past the staleness bound under the `drop`
 * policy is dropped as `stale`. A group with no present reward at all (every grade missing)
 * is dropped as `rewards-missing` — an outage, never counted as wrong.
 */
import type { Reward } from './types.ts';

export type GroupDropReason = 'all-correct' | 'all-wrong' | 'stale' | 'rewards-missing';

export type GroupFilterInput = {
  rewards: readonly Reward[];
  /** Per trajectory: whether its answer was graded correct (null when the grade is missing). */
  correct: readonly (boolean | null)[];
  stale: boolean;
};

/** The reason to drop the group, or null to keep it. */
export function groupDropReason(input: GroupFilterInput): GroupDropReason | null {
  if (input.stale) return 'stale';
  const present = input.rewards.flatMap((reward, index) => (reward === null ? [] : [{ reward, index }]));
  const first = present[0];
  if (first === undefined) return 'rewards-missing';
  if (present.some(({ reward }) => reward !== first.reward)) return null;
  return input.correct[first.index] === true ? 'all-correct' : 'all-wrong';
}
