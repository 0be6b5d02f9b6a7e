/**
 * maj@k: majority vote over the extracted answers of a problem's samples. Answers that the
 * grader deems equal (`answersEquivalent`, injected) fall in one group, so `1/2` and `0.5`
 * vote together. Samples without an answer do not vote.
 *
 * Grouping is greedy in sample order: each answer joins the first earlier group whose
 * representative (its first answer) is equivalent to it. The largest group wins; a tie goes to
 * the group whose first member came earliest in sample order, so results do not depend on
 * timing or on the order of object keys.
 */

/** Whether two extracted answers mean the same thing. */
export type AnswerEquivalence = (left: string, right: string) => boolean | Promise<boolean>;

export type VoteCandidate = { sample: number; answer: string | null; correct: boolean };

export type MajorityVote = {
  /** The winning group's representative answer, or null when no sample has an answer. */
  answer: string | null;
  /** Votes for the winning group. */
  votes: number;
  /** Whether the winning answer is correct (its representative's grade); false when null. */
  correct: boolean;
  /** Number of distinct answer groups. */
  groups: number;
};

/** Votes over candidates; candidates are sorted by sample index before grouping. */
export async function majorityVote(
  candidates: readonly VoteCandidate[],
  equivalent: AnswerEquivalence,
): Promise<MajorityVote> {
  const ordered = [...candidates].sort((left, right) => left.sample - right.sample);
  const groups: { representative: VoteCandidate & { answer: string }; votes: number }[] = [];
  for (const candidate of ordered) {
    if (candidate.answer === null) continue;
    const answer = candidate.answer;
    let joined = false;
    for (const group of groups) {
      if (group.representative.answer === answer || (await equivalent(group.representative.answer, answer))) {
        group.votes++;
        joined = true;
        break;
      }
    }
    if (!joined) groups.push({ representative: { ...candidate, answer }, votes: 1 });
  }
  // Groups were created in order of first appearance, so the first maximum is the earliest.
  let winner: (typeof groups)[number] | undefined;
  for (const group of groups) if (winner === undefined || group.votes > winner.votes) winner = group;
  if (winner === undefined) return { answer: null, votes: 0, correct: false, groups: 0 };
  return {
    answer: winner.representative.answer,
    votes: winner.votes,
    correct: winner.representative.correct,
    groups: groups.length,
  };
}
