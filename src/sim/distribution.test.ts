import { describe, expect, it } from 'vitest';
import { inverseNormal, mean, quantile } from './distribution.ts';

describe('distributions', () => {
  it('inverts the standard normal', () => {
    expect(inverseNormal(0.5)).toBeCloseTo(0, 9);
    expect(inverseNormal(0.975)).toBeCloseTo(1.959964, 5);
    expect(inverseNormal(0.001)).toBeCloseTo(-3.090232, 5);
  });

  it('gives the lognormal mean exp(mu + sigma²/2) when unclipped, and clips', () => {
    const lognormal = { lognormal: { mu: 2, sigma: 0.5 } };
    expect(mean(lognormal) / Math.exp(2 + 0.125)).toBeCloseTo(1, 3);
    expect(quantile({ ...lognormal, max: 10 }, 0.999)).toBe(10);
    expect(quantile({ ...lognormal, min: 5 }, 0.001)).toBe(5);
  });

  it('interpolates quantiles linearly', () => {
    const points = {
      quantiles: [
        [0, 0],
        [0.5, 10],
        [1, 30],
      ] as [number, number][],
    };
    expect(quantile(points, 0.25)).toBe(5);
    expect(quantile(points, 0.75)).toBe(20);
    expect(mean(points)).toBeCloseTo(12.5, 6);
  });
});
