import { describe, expect, it } from 'vitest';
import { skipProbability, skipRuleProblem, zeroVarianceStreak } from './skip-rule.ts';

describe('zeroVarianceStreak', () => {
  it('counts the latest outcomes of one zero-variance kind; a kept group ends it', () => {
    expect(zeroVarianceStreak([])).toEqual({ kind: null, length: 0 });
    expect(zeroVarianceStreak(['all-right', 'kept'])).toEqual({ kind: null, length: 0 });
    expect(zeroVarianceStreak(['kept', 'all-right', 'all-right'])).toEqual({ kind: 'all-right', length: 2 });
    // A change of kind ends the streak: easy and hard are kept apart.
    expect(zeroVarianceStreak(['all-right', 'all-right', 'all-wrong'])).toEqual({
      kind: 'all-wrong',
      length: 1,
    });
  });

  it('passes over outcomes that say nothing about variance', () => {
    expect(zeroVarianceStreak(['all-wrong', 'other', 'all-wrong', 'other'])).toEqual({
      kind: 'all-wrong',
      length: 2,
    });
  });
});

describe('skipProbability', () => {
  const rule = { base: 0.5, max: 0.9, explore: 0.1 };
  it('is 0 without a streak and rises with it to (1 − e) · q', () => {
    expect(skipProbability(0, rule)).toBe(0);
    expect(skipProbability(1, rule)).toBeCloseTo(0.9 * 0.5, 12);
    expect(skipProbability(2, rule)).toBeCloseTo(0.9 * 0.75, 12);
    expect(skipProbability(3, rule)).toBeCloseTo(0.9 * 0.875, 12);
    expect(skipProbability(10, rule)).toBeCloseTo(0.9 * 0.9, 12);
  });

  it('names a bad option', () => {
    expect(skipRuleProblem(rule)).toBeNull();
    expect(skipRuleProblem({ ...rule, max: 1.5 })).toContain('--skip-max');
    expect(skipRuleProblem({ ...rule, explore: Number.NaN })).toContain('--explore');
  });
});
