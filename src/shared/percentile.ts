/**
 * Nearest-rank percentile of ascending `sorted` values: the smallest value with at least
 * `fraction` of the values at or below it. NaN for no values. Used by every bench and metric.
 */
export function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(fraction * sorted.length)));
  return sorted[rank - 1] as number;
}

/** Values in ascending order (a copy). */
export function ascending(values: readonly number[]): number[] {
  return [...values].sort((left, right) => left - right);
}
