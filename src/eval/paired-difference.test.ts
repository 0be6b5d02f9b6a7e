import { describe, expect, it } from 'vitest';
import { formatPairedDifference, mcNemarExactPValue, pairedDifference } from './paired-difference.ts';

/** Grades for ids p0, p1, … from a string of 1 (right) and 0 (wrong). */
function grades(pattern: string): Map<string, boolean> {
  return new Map([...pattern].map((mark, index) => [`p${index}`, mark === '1']));
}

describe('mcNemarExactPValue', () => {
  it('is the doubled binomial tail of the smaller count', () => {
    expect(mcNemarExactPValue(0, 0)).toBe(1);
    expect(mcNemarExactPValue(6, 0)).toBeCloseTo(2 / 64, 12);
    expect(mcNemarExactPValue(0, 6)).toBeCloseTo(2 / 64, 12);
    expect(mcNemarExactPValue(5, 3)).toBeCloseTo((2 * (1 + 8 + 28 + 56)) / 256, 12);
    expect(mcNemarExactPValue(4, 4)).toBe(1);
  });
});

describe('pairedDifference', () => {
  it('counts only the problems both models were graded on, and the discordant ones', () => {
    const before = grades('1100110011');
    const after = grades('1111110000');
    after.delete('p9');
    const result = pairedDifference(before, after);
    expect(result.problems).toBe(9);
    expect(result.gained).toBe(2); // p2, p3
    expect(result.lost).toBe(1); // p8
    expect(result.difference).toBeCloseTo(1 / 9, 12);
    expect(result.gainMeasured).toBe(false);
    const [low, high] = result.interval95;
    expect(low).toBeLessThan(0);
    expect(high).toBeGreaterThan(result.difference);
  });

  it('measures a gain only when the split of discordant problems is unlikely under no difference', () => {
    const before = grades('0'.repeat(10) + '1'.repeat(190));
    const tenGained = grades('1'.repeat(200));
    const measured = pairedDifference(before, tenGained);
    expect(measured.gained).toBe(10);
    expect(measured.pValue).toBeLessThan(0.05);
    expect(measured.gainMeasured).toBe(true);
    expect(measured.interval95[0]).toBeGreaterThan(0);

    // The same +1.5 points as 4 gained and 1 lost is within the noise.
    const noisy = pairedDifference(grades(`0000${'1'.repeat(196)}`), grades(`1111${'1'.repeat(195)}0`));
    expect(noisy.difference).toBeCloseTo(3 / 200, 12);
    expect(noisy.gainMeasured).toBe(false);
    expect(formatPairedDifference(noisy)).toBe(
      '+1.5 points (95% interval −0.9 to +3.9; 4 gained, 1 lost of 200; McNemar p = 0.38)',
    );
  });

  it('says nothing changed when no problem differs, with the width 4 problems leave', () => {
    const result = pairedDifference(grades('1010'), grades('1010'));
    expect(result).toMatchObject({ gained: 0, lost: 0, difference: 0, pValue: 1 });
    expect(result.gainMeasured).toBe(false);
    // Half a problem per cell: ±1.96 · √1 / 6 = ±32.7 points, not a zero-width [0, 0].
    expect(result.interval95[0]).toBeCloseTo(-1.96 / 6, 12);
    expect(result.interval95[1]).toBeCloseTo(1.96 / 6, 12);
  });

  it('keeps a width when every problem moved the same way (4 of 4 gained)', () => {
    const result = pairedDifference(grades('0000'), grades('1111'));
    expect(result.difference).toBe(1);
    // Centre 4/6, standard error √(5 − 16/6) / 6.
    expect(result.interval95[0]).toBeCloseTo(4 / 6 - (1.96 * Math.sqrt(5 - 16 / 6)) / 6, 12);
    expect(result.interval95[1]).toBe(1);
    expect(formatPairedDifference(result)).toContain('95% interval +16.8 to +100.0');
  });
});
