import { describe, expect, it } from 'vitest';
import { learningRateAt } from './learning-rate-schedule.ts';

const schedule = { peak: 1e-3, warmupSteps: 10, totalSteps: 110, minRatio: 0.1 };

describe('learningRateAt', () => {
  it('warms up linearly to the peak', () => {
    expect(learningRateAt(0, schedule)).toBeCloseTo(1e-4, 12);
    expect(learningRateAt(4, schedule)).toBeCloseTo(5e-4, 12);
    expect(learningRateAt(9, schedule)).toBeCloseTo(1e-3, 12);
  });

  it('decays along a half cosine to the floor and stays there', () => {
    expect(learningRateAt(10, schedule)).toBeCloseTo(1e-3, 12);
    expect(learningRateAt(60, schedule)).toBeCloseTo(1e-4 + 0.9e-3 / 2, 12);
    expect(learningRateAt(110, schedule)).toBeCloseTo(1e-4, 12);
    expect(learningRateAt(500, schedule)).toBeCloseTo(1e-4, 12);
  });

  it('never increases after the warmup', () => {
    let previous = Number.POSITIVE_INFINITY;
    for (let step = 10; step < 120; step++) {
      const rate = learningRateAt(step, schedule);
      expect(rate).toBeLessThanOrEqual(previous);
      previous = rate;
    }
  });
});
