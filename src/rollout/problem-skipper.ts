/**
 * Draws each problem's skip from its history, before any generation (`--skip-history`). The
 * draw is a fixed function of (problem, epoch) through `draw`, so a resumed run redraws what the
 * killed one drew. The rule is `skip-rule.ts`; the records are `problem-history.ts`.
 */
import type { ProblemHistory, ProblemSkipLine } from './problem-history.ts';
import { type SkipRuleOptions, skipProbability, zeroVarianceStreak } from './skip-rule.ts';
import type { RolloutProblem } from './types.ts';

export type ProblemSkipperOptions = {
  history: ProblemHistory;
  rule: SkipRuleOptions;
  /** Uniform in [0, 1), fixed by its key. */
  draw: (key: string) => number;
};

export class ProblemSkipper {
  readonly history: ProblemHistory;
  readonly #rule: SkipRuleOptions;
  readonly #draw: (key: string) => number;

  constructor({ history, rule, draw }: ProblemSkipperOptions) {
    this.history = history;
    this.#rule = rule;
    this.#draw = draw;
  }

  /** The skip line when `problem` is skipped in `epoch` (noted in the history), else null. */
  consider(problem: RolloutProblem, epoch: number, step: number): ProblemSkipLine | null {
    const streak = zeroVarianceStreak(this.history.outcomes(problem.id));
    if (streak.kind === null) return null;
    const probability = skipProbability(streak.length, this.#rule);
    if (this.#draw(`${problem.id}\u0000${epoch}`) >= probability) return null;
    this.history.noteSkip(problem.id);
    const kind = streak.kind === 'all-right' ? 'all right' : 'all wrong';
    return {
      type: 'skip',
      step,
      problemId: problem.id,
      epoch,
      streak: streak.length,
      streakKind: streak.kind,
      probability,
      reason: `${kind} in its last ${streak.length} epoch${streak.length === 1 ? '' : 's'} seen`,
    };
  }
}
