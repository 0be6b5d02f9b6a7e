import { describe, expect, it } from 'vitest';
import { fitStepsToBudget } from './fit-steps-to-budget.ts';

const base = { startStep: 0, totalSteps: 100, calibrationSteps: 2, budgetMs: 600_000 };

describe('fitStepsToBudget', () => {
  it('keeps the schedule before calibration ends', () => {
    expect(fitStepsToBudget({ ...base, stepsDone: 1, sessionMs: 60_000 })).toBe(100);
  });

  it('shortens to the steps whose mean time fits the budget, after calibration', () => {
    // 2 steps in 120 s: 60 s a step, 10 minutes hold 10 steps.
    expect(fitStepsToBudget({ ...base, stepsDone: 2, sessionMs: 120_000 })).toBe(10);
  });

  it('never lengthens beyond the steps asked, never cuts below the steps done', () => {
    expect(fitStepsToBudget({ ...base, stepsDone: 2, sessionMs: 2_000 })).toBe(100);
    expect(fitStepsToBudget({ ...base, stepsDone: 2, sessionMs: 2_000_000 })).toBe(2);
  });

  it('counts a resumed session from the step it started at', () => {
    expect(fitStepsToBudget({ ...base, startStep: 40, stepsDone: 42, sessionMs: 120_000 })).toBe(50);
  });

  it('stops at the step reached once the budget is used, however the calibration went', () => {
    expect(fitStepsToBudget({ ...base, totalSteps: 10, stepsDone: 7, sessionMs: 600_000 })).toBe(7);
    expect(fitStepsToBudget({ ...base, totalSteps: 10, stepsDone: 7, sessionMs: 599_999 })).toBe(10);
  });
});
