/**
 * A run's per-problem history, `problem-history.jsonl` in the run folder: one `group` line per
 * decided group (the problem's epoch, its outcome — kept, all right, all wrong — and its solve
 * rate) and one `skip` line per problem skipped before generation (why, and with what
 * probability). Every line carries the step it belongs to, so a resume cuts it back with the
 * other run files and rebuilds the history from what is left: nothing is counted twice.
 */
import type { ProblemGroupLine, ProblemHistoryLine, ProblemSkipLine } from './problem-history-record.ts';
import type { HistoryOutcome } from './skip-rule.ts';
import type { GroupOutcome } from './types.ts';

export const PROBLEM_HISTORY_FILE = 'problem-history.jsonl';

export type { ProblemGroupLine, ProblemHistoryLine, ProblemSkipLine };

/** The outcome a decided group records. */
export function historyOutcome(group: GroupOutcome): HistoryOutcome {
  if (group.kept) return 'kept';
  if (group.dropReason === 'all-correct') return 'all-right';
  if (group.dropReason === 'all-wrong') return 'all-wrong';
  return 'other';
}

/** The history as read from its lines, grown as groups are decided. */
export class ProblemHistory {
  readonly #outcomes = new Map<string, HistoryOutcome[]>();
  readonly #skips = new Map<string, number>();

  static fromLines(lines: readonly ProblemHistoryLine[]): ProblemHistory {
    const history = new ProblemHistory();
    for (const line of lines) {
      if (line.type === 'group') history.#addOutcome(line.problemId, line.outcome);
      else history.#skips.set(line.problemId, (history.#skips.get(line.problemId) ?? 0) + 1);
    }
    return history;
  }

  /** Adds a decided group and returns its line. */
  recordGroup(group: GroupOutcome, epoch: number | null): ProblemGroupLine {
    const graded = group.correct.filter((correct): correct is boolean => correct !== null);
    const outcome = historyOutcome(group);
    this.#addOutcome(group.problem.id, outcome);
    return {
      type: 'group',
      step: group.step,
      problemId: group.problem.id,
      epoch,
      outcome,
      dropReason: group.dropReason,
      solveRate: graded.length === 0 ? null : graded.filter(Boolean).length / graded.length,
      members: group.trajectories.length,
    };
  }

  noteSkip(problemId: string): void {
    this.#skips.set(problemId, (this.#skips.get(problemId) ?? 0) + 1);
  }

  /** The problem's decided outcomes, oldest first. */
  outcomes(problemId: string): readonly HistoryOutcome[] {
    return this.#outcomes.get(problemId) ?? [];
  }

  skips(problemId: string): number {
    return this.#skips.get(problemId) ?? 0;
  }

  #addOutcome(problemId: string, outcome: HistoryOutcome): void {
    const list = this.#outcomes.get(problemId);
    if (list === undefined) this.#outcomes.set(problemId, [outcome]);
    else list.push(outcome);
  }
}
