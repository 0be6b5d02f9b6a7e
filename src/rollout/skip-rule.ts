/**
 * Pre-rollout skipping from a problem's history (GRESO, arXiv 2506.02177), pure: how long a
 * problem's latest run of zero-variance groups is, and the probability of skipping it before
 * any generation. It does not draw the skip or keep the history (`problem-skipper.ts`).
 *
 * The paper's rule: a prompt whose last z sampled epochs all gave zero-variance groups is
 * skipped with probability 1 − max(p_e^z, 0.01), p_e the exploration probability (tuned per
 * easy / hard kind towards a target zero-variance share). Ours, with p = 1 − p_e fixed:
 *
 *   P_skip(z) = (1 − e) · min(q, 1 − (1 − p)^z),   P_skip(0) = 0
 *
 * p (`--skip-base`) is the skip probability after one zero-variance epoch, q (`--skip-max`) caps
 * what a long streak reaches (the paper's 0.99), and e (`--explore`) exempts any draw from
 * skipping with that probability, so a long-skipped problem is still tried now and then. The
 * streak counts the latest outcomes of one kind only (all right, or all wrong), as the paper
 * keeps easy and hard prompts apart; a kept group ends it, and an outcome that says nothing
 * about variance (an abandoned, stale or ungraded group) is passed over.
 */

/** What a decided group says about its problem. */
export type HistoryOutcome = 'kept' | 'all-right' | 'all-wrong' | 'other';

export type SkipRuleOptions = {
  /** p: the skip probability after one zero-variance epoch. */
  base: number;
  /** q: the most any streak reaches. */
  max: number;
  /** e: the share of draws never skipped (exploration). */
  explore: number;
};

export const DEFAULT_SKIP_RULE: SkipRuleOptions = { base: 0.5, max: 0.95, explore: 0.05 };

export type ZeroVarianceStreak = { kind: 'all-right' | 'all-wrong' | null; length: number };

/** The latest run of same-kind zero-variance outcomes, oldest first in `outcomes`. */
export function zeroVarianceStreak(outcomes: readonly HistoryOutcome[]): ZeroVarianceStreak {
  let kind: ZeroVarianceStreak['kind'] = null;
  let length = 0;
  for (let index = outcomes.length - 1; index >= 0; index--) {
    const outcome = outcomes[index];
    if (outcome === 'other') continue;
    if (outcome === 'kept') break;
    if (kind === null) kind = outcome as 'all-right' | 'all-wrong';
    else if (outcome !== kind) break;
    length++;
  }
  return { kind, length };
}

/** P_skip(z) of the module comment. */
export function skipProbability(streak: number, { base, max, explore }: SkipRuleOptions): number {
  if (streak <= 0) return 0;
  return (1 - explore) * Math.min(max, 1 - (1 - base) ** streak);
}

/** Checks the rule's options; returns a message naming the bad field, or null. */
export function skipRuleProblem(options: SkipRuleOptions): string | null {
  for (const [name, value] of [
    ['skip-base', options.base],
    ['skip-max', options.max],
    ['explore', options.explore],
  ] as const) {
    if (!Number.isFinite(value) || value < 0 || value > 1)
      return `--${name} must be in [0, 1] (got ${value})`;
  }
  return null;
}
