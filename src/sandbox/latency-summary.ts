/** Percentiles of latency samples (nearest-rank), for benchmarks. */
import { ascending, percentile } from '../shared/percentile.ts';

export type LatencySummary = { count: number; p50Ms: number; p99Ms: number; meanMs: number };

/** Nearest-rank p50 / p99 and the mean of `samplesMs` (zeros when empty). */
export function summarizeLatency(samplesMs: readonly number[]): LatencySummary {
  if (samplesMs.length === 0) return { count: 0, p50Ms: 0, p99Ms: 0, meanMs: 0 };
  const sorted = ascending(samplesMs);
  const mean = sorted.reduce((sum, value) => sum + value, 0) / sorted.length;
  return {
    count: sorted.length,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    meanMs: mean,
  };
}
