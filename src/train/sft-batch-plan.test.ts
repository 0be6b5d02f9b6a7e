import { describe, expect, it } from 'vitest';
import { planSftBatches } from './sft-batch-plan.ts';
import type { SftExample } from './sft-example.ts';

const examples: SftExample[] = Array.from({ length: 100 }, (_, index) => ({
  id: `e${index}`,
  level: 1 + (index % 4),
  inputIds: Array.from({ length: 10 + ((index * 37) % 90) }, () => 1),
  lossMask: Array.from({ length: 10 + ((index * 37) % 90) }, () => 1),
}));
const ids = (batch: SftExample[]) => batch.map((example) => example.id);

describe('planSftBatches', () => {
  it('visits every example once per epoch (the remainder dropped) and reshuffles each epoch', () => {
    const plan = planSftBatches({ examples, batchSize: 8, seed: 3, bucketBatches: 4 });
    expect(plan.batchesPerEpoch).toBe(12);
    const epoch = (index: number) =>
      Array.from({ length: 12 }, (_, step) => ids(plan.batchAt(index * 12 + step))).flat();
    const first = epoch(0);
    expect(new Set(first).size).toBe(96);
    expect(epoch(1)).not.toEqual(first);
    expect(new Set(epoch(1)).size).toBe(96);
  });

  it('is a pure function of seed and step: a resumed plan yields the same batches', () => {
    const a = planSftBatches({ examples, batchSize: 8, seed: 3 });
    const b = planSftBatches({ examples, batchSize: 8, seed: 3 });
    const c = planSftBatches({ examples, batchSize: 8, seed: 4 });
    const stepsA = [0, 5, 11, 12, 30].map((step) => ids(a.batchAt(step)));
    // b is asked in another order, as a resumed run would.
    const stepsB = [30, 12, 11, 5, 0].map((step) => ids(b.batchAt(step))).reverse();
    expect(stepsB).toEqual(stepsA);
    expect(ids(c.batchAt(0))).not.toEqual(stepsA[0]);
  });

  it('groups similar lengths into a batch (less padding than a random order)', () => {
    const padding = (bucketBatches: number) => {
      const plan = planSftBatches({ examples, batchSize: 8, seed: 1, bucketBatches });
      let waste = 0;
      for (let step = 0; step < plan.batchesPerEpoch; step++) {
        const lengths = plan.batchAt(step).map((example) => example.inputIds.length);
        waste += lengths.reduce((total, length) => total + Math.max(...lengths) - length, 0);
      }
      return waste;
    };
    expect(padding(12)).toBeLessThan(padding(1) / 2);
  });

  it('refuses fewer examples than one batch', () => {
    expect(() => planSftBatches({ examples: examples.slice(0, 3), batchSize: 8, seed: 1 })).toThrow(
      RangeError,
    );
  });
});
