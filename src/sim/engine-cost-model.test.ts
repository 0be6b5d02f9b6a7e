import { describe, expect, it } from 'vitest';
import { type CostModel, decodeMs, iterationsWithin, prefillMs } from './engine-cost-model.ts';

const dense: CostModel = {
  decodeBaseMs: 10,
  decodePerSequenceMs: 1,
  decodePerContextTokenMs: 0.01,
  prefillPerTokenMs: 0.5,
};

describe('engine cost model', () => {
  it('prices prefill by the attention each token does over the context before it', () => {
    expect(prefillMs(dense, 100, 300)).toBe(100);
    const attention = { ...dense, prefillPerContextTokenMs: 0.001 };
    // 200 tokens × 0.5 + 0.001 × (300² − 100²) / 2 = 100 + 40.
    expect(prefillMs(attention, 100, 300)).toBeCloseTo(140, 9);
    // The same tokens cost more at the end of a long context than at its start.
    expect(prefillMs(attention, 10_000, 10_200)).toBeGreaterThan(prefillMs(attention, 0, 200));
  });

  it('reads the expert weights a batch touches: k of E experts per sequence, all of them for a large batch', () => {
    const moe: CostModel = { ...dense, experts: { readAllMs: 16, active: 8, total: 128 } };
    expect(decodeMs(moe, 1, 0, 1) - decodeMs(dense, 1, 0, 1)).toBeCloseTo(16 * (8 / 128), 9);
    expect(decodeMs(moe, 2, 0, 1) - decodeMs(dense, 2, 0, 1)).toBeCloseTo(16 * (1 - (120 / 128) ** 2), 9);
    expect(decodeMs(moe, 256, 0, 1) - decodeMs(dense, 256, 0, 1)).toBeCloseTo(16, 3);
    // The inverse agrees with the forward cost.
    const ms = decodeMs(moe, 32, 5000, 40);
    expect(iterationsWithin(moe, 32, 5000, ms)).toBe(40);
  });
});
