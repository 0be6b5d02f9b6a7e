import { describe, expect, it } from 'vitest';
import { type ResampleMember, resampleOnCorrect, stringDraw } from './resample-on-correct.ts';

const member = (correct: boolean | null, toolErrors = 0, formatFaults = 0, draw = 0.5): ResampleMember => ({
  correct,
  toolErrors,
  formatFaults,
  draw,
});

describe('resampleOnCorrect', () => {
  it('keeps a group no larger than its size as it is', () => {
    expect(resampleOnCorrect([member(true), member(false)], 2)).toEqual({ keep: [0, 1], discarded: [] });
  });

  it('keeps the share of right answers, and of those the ones with the fewest errors and format faults', () => {
    // 4 right (penalties 2, 0, 1, 0) and 4 wrong, cut to 4: 2 right, 2 wrong.
    const members = [
      member(true, 2),
      member(true, 0, 0, 0.9),
      member(true, 0, 1),
      member(true, 0, 0, 0.1),
      member(false, 5, 0, 0.4),
      member(false, 0, 0, 0.3),
      member(false, 0, 0, 0.2),
      member(false, 3, 0, 0.1),
    ];
    const choice = resampleOnCorrect(members, 4);
    expect(choice.keep).toEqual([1, 3, 6, 7]);
    expect(choice.discarded).toEqual([
      { index: 0, reason: 'correct-more-faults' },
      { index: 2, reason: 'correct-more-faults' },
      { index: 4, reason: 'uniform' },
      { index: 5, reason: 'uniform' },
    ]);
  });

  it('a wrong answer is never preferred for being clean: wrong ones are kept by the draw alone', () => {
    const members = [member(true), member(true), member(false, 9, 9, 0.1), member(false, 0, 0, 0.8)];
    expect(resampleOnCorrect(members, 2).keep).toEqual([0, 2]);
  });

  it('a mixed group stays mixed, however lopsided', () => {
    const members = [...Array.from({ length: 15 }, () => member(true)), member(false)];
    const { keep } = resampleOnCorrect(members, 8);
    expect(keep).toHaveLength(8);
    expect(keep).toContain(15);
    const allWrong = [member(true), ...Array.from({ length: 15 }, () => member(false))];
    expect(resampleOnCorrect(allWrong, 8).keep).toContain(0);
  });

  it('an all-right or all-wrong group stays so, cut to its size', () => {
    expect(resampleOnCorrect([member(true), member(true), member(true)], 2).keep).toHaveLength(2);
    expect(resampleOnCorrect([member(null), member(false), member(false)], 2).keep).toHaveLength(2);
  });
});

describe('stringDraw', () => {
  it('is fixed per text and spread over [0, 1)', () => {
    expect(stringDraw('s1-2-abc')).toBe(stringDraw('s1-2-abc'));
    const draws = Array.from({ length: 1000 }, (_, index) => stringDraw(`trajectory-${index}`));
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...draws)).toBeLessThan(1);
    const mean = draws.reduce((sum, draw) => sum + draw, 0) / draws.length;
    expect(mean).toBeGreaterThan(0.45);
    expect(mean).toBeLessThan(0.55);
  });
});
