/**
 * The difference in accuracy between two models graded on the same problems, with its noise.
 * Only the discordant problems (right for one model, wrong for the other) carry information
 * about the difference, so the test is McNemar's: under "no difference" each discordant
 * problem is a fair coin between the two, and the two-sided exact binomial p-value says how
 * surprising the observed split is. The interval is Agresti and Min's adjusted Wald interval
 * for matched pairs ("Wald+2", Statistics in Medicine 2005): the normal interval after half a
 * problem is added to each of the four right/wrong cells, so it keeps a width when every problem
 * moved the same way (4 of 4 gained, or none discordant), where the plain normal interval of the
 * per-problem differences collapses to a point; clipped to [−1, 1].
 */

export type PairedDifference = {
  /** Problems graded for both models. */
  problems: number;
  /** Right for the second model, wrong for the first. */
  gained: number;
  /** Right for the first model, wrong for the second. */
  lost: number;
  /** Accuracy of the second minus accuracy of the first, as a fraction. */
  difference: number;
  /** 95% interval of the difference (adjusted Wald for matched pairs, see the header). */
  interval95: [number, number];
  /** Two-sided exact McNemar p-value (1 when no problem is discordant). */
  pValue: number;
  /** True when the second model is better at the 5% level. */
  gainMeasured: boolean;
};

/** Compares `after` with `before` on the problem ids both graded (ungraded ids are skipped). */
export function pairedDifference(
  before: ReadonlyMap<string, boolean>,
  after: ReadonlyMap<string, boolean>,
): PairedDifference {
  let problems = 0;
  let gained = 0;
  let lost = 0;
  for (const [id, beforeCorrect] of before) {
    const afterCorrect = after.get(id);
    if (afterCorrect === undefined) continue;
    problems++;
    if (afterCorrect && !beforeCorrect) gained++;
    if (beforeCorrect && !afterCorrect) lost++;
  }
  const difference = problems === 0 ? 0 : (gained - lost) / problems;
  // Half a problem added to each cell: n + 2 problems, gained + 0.5 and lost + 0.5 discordant.
  const adjusted = problems + 2;
  const center = (gained - lost) / adjusted;
  const standardError = Math.sqrt(gained + lost + 1 - (gained - lost) ** 2 / adjusted) / adjusted;
  const halfWidth = 1.96 * standardError;
  const pValue = mcNemarExactPValue(gained, lost);
  return {
    problems,
    gained,
    lost,
    difference,
    // A difference of two accuracies lies in [−1, 1]; the normal interval can pass those bounds.
    interval95: [Math.max(-1, center - halfWidth), Math.min(1, center + halfWidth)],
    pValue,
    gainMeasured: gained > lost && pValue < 0.05,
  };
}

/** Two-sided exact binomial test of `gained` against `lost` at p = 1/2. */
export function mcNemarExactPValue(gained: number, lost: number): number {
  const discordant = gained + lost;
  if (discordant === 0) return 1;
  const fewer = Math.min(gained, lost);
  // P(X ≤ fewer) for X ~ Binomial(discordant, 1/2), summed in log space, doubled.
  let tail = 0;
  let logChoose = 0; // log C(discordant, 0)
  for (let k = 0; k <= fewer; k++) {
    if (k > 0) logChoose += Math.log(discordant - k + 1) - Math.log(k);
    tail += Math.exp(logChoose - discordant * Math.LN2);
  }
  return Math.min(1, 2 * tail);
}

/** "+1.5 points (95% interval −0.9 to +3.9; 4 gained, 1 lost of 200; McNemar p = 0.38)". */
export function formatPairedDifference(result: PairedDifference): string {
  const points = (value: number) => `${value >= 0 ? '+' : '−'}${Math.abs(100 * value).toFixed(1)}`;
  const [low, high] = result.interval95;
  return (
    `${points(result.difference)} points (95% interval ${points(low)} to ${points(high)}; ` +
    `${result.gained} gained, ${result.lost} lost of ${result.problems}; McNemar p = ${result.pValue.toFixed(2)})`
  );
}
