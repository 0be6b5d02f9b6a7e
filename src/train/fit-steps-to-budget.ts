/**
 * A run's length under a time budget (`train sft --model --minutes`): after `calibrationSteps`
 * steps of this session the schedule is shortened to the steps whose mean time fits the budget
 * (never lengthened beyond what was asked, never below the steps done); later, a schedule is cut
 * at the step reached once the session's training time has used the budget (steps got slower).
 * Pure: the caller measures time.
 */
export type BudgetFitInput = {
  /** Steps done so far in the run (1-based count after the step just taken). */
  stepsDone: number;
  /** The step this session started from. */
  startStep: number;
  /** The schedule's current length. */
  totalSteps: number;
  /** Training time of this session so far. */
  sessionMs: number;
  budgetMs: number;
  calibrationSteps: number;
};

/** The schedule's new length (equal to `totalSteps` when nothing changes). */
export function fitStepsToBudget(input: BudgetFitInput): number {
  const { stepsDone, startStep, totalSteps, sessionMs, budgetMs, calibrationSteps } = input;
  const sessionSteps = stepsDone - startStep;
  if (sessionSteps === calibrationSteps) {
    const fitting = startStep + Math.floor(budgetMs / (sessionMs / sessionSteps));
    return Math.max(stepsDone, Math.min(totalSteps, fitting));
  }
  return sessionMs >= budgetMs ? Math.min(totalSteps, stepsDone) : totalSteps;
}
