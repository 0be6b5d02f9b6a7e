import { describe, expect, it } from 'vitest';
import { fitCostModel } from './cost-model-fit.ts';

describe('fitCostModel', () => {
  it('recovers the constants of exact measurements', () => {
    const truth = { a: 4, b: 0.3, c: 0.002, p: 0.05 };
    const decode = [1, 4, 16, 48].flatMap((batch) =>
      [100, 2000, 9000].map((contextTokens) => ({
        batch,
        contextTokens,
        iterationMs: truth.a + truth.b * batch + truth.c * contextTokens,
      })),
    );
    const prefill = [64, 256, 640].map((promptTokens) => ({ promptTokens, ms: 12 + truth.p * promptTokens }));
    const fit = fitCostModel(decode, prefill);
    expect(fit.costModel.decodeBaseMs).toBeCloseTo(4, 9);
    expect(fit.costModel.decodePerSequenceMs).toBeCloseTo(0.3, 9);
    expect(fit.costModel.decodePerContextTokenMs).toBeCloseTo(0.002, 9);
    expect(fit.costModel.prefillPerTokenMs).toBeCloseTo(0.05, 9);
    expect(fit.prefillInterceptMs).toBeCloseTo(12, 9);
    expect(fit.decodeRmsErrorMs).toBeCloseTo(0, 9);
  });

  it('drops a coefficient that noise makes negative and refits the others', () => {
    const decode = [
      { batch: 1, contextTokens: 100, iterationMs: 5 },
      { batch: 8, contextTokens: 800, iterationMs: 5.1 },
      { batch: 32, contextTokens: 1000, iterationMs: 4.9 },
      { batch: 2, contextTokens: 6000, iterationMs: 5.2 },
    ];
    const fit = fitCostModel(decode, [
      { promptTokens: 10, ms: 1 },
      { promptTokens: 20, ms: 2 },
    ]);
    expect(fit.costModel.decodePerSequenceMs).toBeGreaterThanOrEqual(0);
    expect(fit.costModel.decodePerContextTokenMs).toBeGreaterThanOrEqual(0);
    expect(fit.costModel.decodeBaseMs).toBeGreaterThan(4.5);
  });
});
