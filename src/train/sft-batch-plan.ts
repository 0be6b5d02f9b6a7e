/**
 * The order in which SFT examples are trained: a pure function of (examples, seed, step), so
 * a resumed run sees exactly the batches the uninterrupted run would have seen.
 *
 * Each epoch shuffles the examples (seeded by seed and epoch), cuts the order into windows of
 * `bucketBatches` batches, sorts each window by length and slices it into batches, then
 * shuffles the batches. Rows of a batch thus have similar lengths (less padding: the step
 * pads to the longest row) while every epoch still visits every example once in a new order.
 * The last incomplete batch of an epoch is dropped.
 */
import { createSeededRandom, type Random } from '../tasks/index.ts';
import type { SftExample } from './sft-example.ts';

export type SftBatchPlan = {
  batchesPerEpoch: number;
  /** The batch of 0-based optimizer step `step`. */
  batchAt(step: number): SftExample[];
};

export type SftBatchPlanOptions = {
  examples: readonly SftExample[];
  batchSize: number;
  seed: number | string;
  /** Batches per length-sorted window (1 = no bucketing). */
  bucketBatches?: number;
};

function shuffle<T>(items: T[], random: Random): T[] {
  for (let index = items.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [items[index], items[other]] = [items[other]!, items[index]!];
  }
  return items;
}

/** Plans the batches; throws a RangeError when there are fewer examples than one batch. */
export function planSftBatches({
  examples,
  batchSize,
  seed,
  bucketBatches = 16,
}: SftBatchPlanOptions): SftBatchPlan {
  const batchesPerEpoch = Math.floor(examples.length / batchSize);
  if (batchesPerEpoch === 0) {
    throw new RangeError(
      `SFT needs at least one batch: ${examples.length} examples, batch size ${batchSize}`,
    );
  }
  let cachedEpoch = -1;
  let cached: SftExample[][] = [];
  const epochBatches = (epoch: number): SftExample[][] => {
    if (epoch === cachedEpoch) return cached;
    const random = createSeededRandom(`${seed}:sft-epoch:${epoch}`);
    const order = shuffle([...examples], random).slice(0, batchesPerEpoch * batchSize);
    const batches: SftExample[][] = [];
    const window = batchSize * bucketBatches;
    for (let start = 0; start < order.length; start += window) {
      const sorted = order.slice(start, start + window).sort((a, b) => a.inputIds.length - b.inputIds.length);
      for (let offset = 0; offset < sorted.length; offset += batchSize) {
        batches.push(sorted.slice(offset, offset + batchSize));
      }
    }
    cachedEpoch = epoch;
    cached = shuffle(batches, random);
    return cached;
  };
  return {
    batchesPerEpoch,
    batchAt: (step) => epochBatches(Math.floor(step / batchesPerEpoch))[step % batchesPerEpoch]!,
  };
}
