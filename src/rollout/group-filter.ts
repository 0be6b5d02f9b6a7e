/**
 * Which groups carry a GRPO signal, pure. The filter reads correctness, not rewards (the
 * paper filters problems whose rollouts are all correct or all wrong; DAPO's dynamic sampling
 * filters on accuracy): an all-correct group whose members differ only in the composite
 * reward's code-call bonus is dropped as `all-correct`, because std normalisation would turn
 * that bonus difference into advantages as large as a right answer among wrong ones. A group
 * whose graded members are all wrong is dropped as `all-wrong`. A group holding a trajectory
 * past the staleness bound under the `drop` policy is dropped as `stale`. A group with no
 * grade at all (every grade missing) is dropped as `rewards-missing` — an outage, never
 * counted as wrong. Members with a missing grade are left out of the comparison.
 */

/** `abandoned`: the scheduler stopped the group's unfinished members (`abandonAgreeing`). */
export type GroupDropReason = 'all-correct' | 'all-wrong' | 'stale' | 'rewards-missing' | 'abandoned';

export type GroupFilterInput = {
  /** Per trajectory: whether its answer was graded correct (null when the grade is missing). */
  correct: readonly (boolean | null)[];
  stale: boolean;
};

/** The reason to drop the group, or null to keep it. */
export function groupDropReason(input: GroupFilterInput): GroupDropReason | null {
  if (input.stale) return 'stale';
  const graded = input.correct.filter((correct): correct is boolean => correct !== null);
  const first = graded[0];
  if (first === undefined) return 'rewards-missing';
  if (graded.some((correct) => correct !== first)) return null;
  return first ? 'all-correct' : 'all-wrong';
}
