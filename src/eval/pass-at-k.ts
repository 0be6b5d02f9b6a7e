/**
 * Accuracy estimators over n graded samples of one problem, c of them correct.
 *
 * pass@k is the unbiased estimator 1 - C(n-c, k) / C(n, k): the chance that k samples drawn
 * without replacement from the n include a correct one. It is computed as the product
 * 1 - Π_{i=n-c+1..n} (1 - k/i), which never forms a binomial coefficient and so neither
 * overflows nor loses precision for large n.
 */

/** Unbiased pass@k for n samples with c correct; requires 1 <= k <= n. */
export function passAtK(n: number, c: number, k: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(c) || !Number.isInteger(k)) {
    throw new RangeError(`passAtK needs integers, got n=${n} c=${c} k=${k}`);
  }
  if (k < 1 || k > n) throw new RangeError(`passAtK needs 1 <= k <= n, got k=${k} n=${n}`);
  if (c < 0 || c > n) throw new RangeError(`passAtK needs 0 <= c <= n, got c=${c} n=${n}`);
  if (n - c < k) return 1;
  let allWrong = 1;
  for (let i = n - c + 1; i <= n; i++) allWrong *= 1 - k / i;
  return 1 - allWrong;
}

/** avg@k for one problem: the share of its samples graded correct (0 when it has none). */
export function averageAccuracy(correct: readonly boolean[]): number {
  if (correct.length === 0) return 0;
  return correct.filter(Boolean).length / correct.length;
}

/** The k values reported for n samples: powers of two below n, and n itself. */
export function reportedKs(n: number): number[] {
  const ks: number[] = [];
  for (let k = 1; k < n; k *= 2) ks.push(k);
  if (n >= 1) ks.push(n);
  return ks;
}
