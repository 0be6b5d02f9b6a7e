import { describe, expect, it } from 'vitest';
import { type CostModel, prefillMs } from './engine-cost-model.ts';
import { nextPrefillChunk, type PendingPrefill } from './prefill-chunk.ts';

const attention: CostModel = {
  decodeBaseMs: 10,
  decodePerSequenceMs: 1,
  decodePerContextTokenMs: 0.01,
  prefillPerTokenMs: 0.5,
  prefillPerContextTokenMs: 0.001,
};

describe('nextPrefillChunk', () => {
  it("splits a long prefill into chunks whose costs add up to the whole prefill's", () => {
    const pending: PendingPrefill = { from: 1_000, to: 10_000, loadMs: 0 };
    let total = 0;
    let chunks = 0;
    while (pending.from < pending.to) {
      const chunk = nextPrefillChunk([pending], 2_048, attention);
      expect(chunk.tokens[0]).toBe(Math.min(2_048, pending.to - pending.from));
      pending.from += chunk.tokens[0] as number;
      total += chunk.ms;
      chunks++;
    }
    expect(chunks).toBe(5);
    expect(total).toBeCloseTo(prefillMs(attention, 1_000, 10_000), 6);
    // A later chunk of the same size costs more: its tokens attend to a longer context.
    const early = nextPrefillChunk([{ from: 0, to: 2_048, loadMs: 0 }], 2_048, attention);
    const late = nextPrefillChunk([{ from: 8_000, to: 10_048, loadMs: 0 }], 2_048, attention);
    expect(late.ms).toBeGreaterThan(early.ms);
  });

  it('fills one budget from the pending prefills in order, with a load from host memory once', () => {
    const chunk = nextPrefillChunk(
      [
        { from: 0, to: 100, loadMs: 3 },
        { from: 50, to: 500, loadMs: 0 },
        { from: 0, to: 40, loadMs: 0 },
      ],
      256,
      attention,
    );
    expect(chunk.tokens).toEqual([100, 156]);
    expect(chunk.ms).toBeCloseTo(3 + prefillMs(attention, 0, 100) + prefillMs(attention, 50, 206), 9);
  });
});
