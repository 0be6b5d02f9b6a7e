/**
 * Shared bins for histograms of one or more value sets (so two runs line up): integer bins
 * of width one for small integer data (code calls), else `binCount` equal-width bins.
 */

export type Histogram = { labels: string[]; counts: number[][] };

/** Bins every set of values with the same edges; `counts[i][b]` is set i's count in bin b. */
export function histogram(
  sets: readonly (readonly number[])[],
  { binCount = 12 }: { binCount?: number } = {},
): Histogram {
  const all = sets.flat();
  if (all.length === 0) return { labels: [], counts: sets.map(() => []) };
  const low = Math.min(...all);
  const high = Math.max(...all);
  const integers = all.every(Number.isInteger);
  if (integers && high - low < 2 * binCount) {
    const labels = Array.from({ length: high - low + 1 }, (_, index) => String(low + index));
    const counts = sets.map((values) => {
      const bins = labels.map(() => 0);
      for (const value of values) bins[value - low] = (bins[value - low] ?? 0) + 1;
      return bins;
    });
    return { labels, counts };
  }
  const width = (high - low) / binCount || 1;
  const edges = Array.from({ length: binCount + 1 }, (_, index) => low + index * width);
  const labels = edges.slice(0, -1).map((edge) => compact(edge));
  const counts = sets.map((values) => {
    const bins = labels.map(() => 0);
    for (const value of values) {
      const bin = Math.min(binCount - 1, Math.floor((value - low) / width));
      bins[bin] = (bins[bin] ?? 0) + 1;
    }
    return bins;
  });
  return { labels, counts };
}

/** 1234 → "1.2k", 12 → "12". */
export function compact(value: number): string {
  if (Math.abs(value) >= 10_000) return `${Math.round(value / 1000)}k`;
  if (Math.abs(value) >= 1000) return `${(value / 1000).toFixed(1)}k`;
  return String(Math.round(value));
}
