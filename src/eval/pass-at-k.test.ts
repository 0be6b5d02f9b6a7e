import { describe, expect, it } from 'vitest';
import { averageAccuracy, passAtK, reportedKs } from './pass-at-k.ts';

/** C(n-c,k)/C(n,k) through log-gamma (Lanczos), an independent route to the same number. */
function passAtKByLogGamma(n: number, c: number, k: number): number {
  if (n - c < k) return 1;
  const logChoose = (a: number, b: number) => logFactorial(a) - logFactorial(b) - logFactorial(a - b);
  return 1 - Math.exp(logChoose(n - c, k) - logChoose(n, k));
}
function logFactorial(value: number): number {
  let total = 0;
  for (let i = 2; i <= value; i++) total += Math.log(i);
  return total;
}

describe('passAtK', () => {
  it('matches hand-computed values', () => {
    expect(passAtK(4, 1, 1)).toBeCloseTo(0.25, 12);
    expect(passAtK(4, 1, 2)).toBeCloseTo(0.5, 12); // 1 - C(3,2)/C(4,2) = 1 - 3/6
    expect(passAtK(4, 2, 2)).toBeCloseTo(5 / 6, 12); // 1 - C(2,2)/C(4,2)
    expect(passAtK(4, 3, 2)).toBe(1);
    expect(passAtK(4, 0, 4)).toBe(0);
    expect(passAtK(5, 2, 3)).toBeCloseTo(1 - 1 / 10, 12); // 1 - C(3,3)/C(5,3)
  });

  it('pass@1 is the share correct', () => {
    for (let c = 0; c <= 32; c++) expect(passAtK(32, c, 1)).toBeCloseTo(c / 32, 12);
  });

  it('stays accurate where binomials overflow a double', () => {
    // C(2000, 1000) is about 1e600: the direct ratio would be Infinity / Infinity.
    expect(passAtK(2000, 3, 1000)).toBeCloseTo(passAtKByLogGamma(2000, 3, 1000), 9);
    expect(passAtK(1000, 10, 100)).toBeCloseTo(passAtKByLogGamma(1000, 10, 100), 9);
  });

  it('rejects k outside 1..n', () => {
    expect(() => passAtK(4, 1, 5)).toThrow(RangeError);
    expect(() => passAtK(4, 1, 0)).toThrow(RangeError);
    expect(() => passAtK(4, 5, 1)).toThrow(RangeError);
  });
});

describe('averageAccuracy and reportedKs', () => {
  it('averages and lists powers of two with n', () => {
    expect(averageAccuracy([true, false, true, true])).toBe(0.75);
    expect(averageAccuracy([])).toBe(0);
    expect(reportedKs(1)).toEqual([1]);
    expect(reportedKs(4)).toEqual([1, 2, 4]);
    expect(reportedKs(6)).toEqual([1, 2, 4, 6]);
  });
});
