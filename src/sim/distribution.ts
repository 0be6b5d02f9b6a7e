/**
 * Distributions a workload file names: a constant, a lognormal (`mu`, `sigma` of the log)
 * clipped to [`min`, `max`], or a list of quantiles `[p, value]` sampled by linear
 * interpolation (p from 0 to 1, values ascending). `mean` gives the expected value, by
 * numerical integration over the quantile function, for the bound and the docs.
 */
import { z } from 'zod';
import type { Random } from '../tasks/seeded-random.ts';

const clip = { min: z.number().nonnegative().optional(), max: z.number().positive().optional() };

export const distributionSchema = z.union([
  z.object({ constant: z.number().nonnegative() }).strict(),
  z
    .object({ lognormal: z.object({ mu: z.number(), sigma: z.number().nonnegative() }).strict(), ...clip })
    .strict()
    .refine(
      (distribution) => (distribution.min ?? 0) <= (distribution.max ?? Number.POSITIVE_INFINITY),
      'min must not exceed max (every draw would be clipped to an empty range)',
    ),
  z
    .object({
      quantiles: z
        .array(z.tuple([z.number().min(0).max(1), z.number().nonnegative()]))
        .min(2)
        .refine(
          (points) => points[0]?.[0] === 0 && points.at(-1)?.[0] === 1,
          'quantiles must start at p=0 and end at p=1',
        )
        .refine(
          (points) =>
            points.every(
              (point, index) =>
                index === 0 ||
                (point[0] > (points[index - 1]?.[0] ?? 0) && point[1] >= (points[index - 1]?.[1] ?? 0)),
            ),
          'quantiles must ascend in p and in value',
        ),
    })
    .strict(),
]);

export type Distribution = z.infer<typeof distributionSchema>;

/** The value at probability `p` (the quantile function). */
export function quantile(distribution: Distribution, p: number): number {
  if ('constant' in distribution) return distribution.constant;
  if ('lognormal' in distribution) {
    const { mu, sigma } = distribution.lognormal;
    const value = Math.exp(mu + sigma * inverseNormal(p));
    return Math.min(distribution.max ?? Number.POSITIVE_INFINITY, Math.max(distribution.min ?? 0, value));
  }
  const points = distribution.quantiles;
  for (let index = 1; index < points.length; index++) {
    const [p1, v1] = points[index] as [number, number];
    const [p0, v0] = points[index - 1] as [number, number];
    if (p <= p1) return v0 + ((v1 - v0) * (p - p0)) / (p1 - p0);
  }
  return (points.at(-1) as [number, number])[1];
}

/** One draw. */
export function sample(distribution: Distribution, random: Random): number {
  return quantile(distribution, random());
}

/** The expected value (midpoint rule over 20,000 quantiles). */
export function mean(distribution: Distribution): number {
  const steps = 20_000;
  let sum = 0;
  for (let index = 0; index < steps; index++) sum += quantile(distribution, (index + 0.5) / steps);
  return sum / steps;
}

/** Acklam's rational approximation of the standard normal quantile (relative error < 1.2e-9). */
export function inverseNormal(p: number): number {
  if (p <= 0) return Number.NEGATIVE_INFINITY;
  if (p >= 1) return Number.POSITIVE_INFINITY;
  const a = [
    -39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716,
    2.506628277459239,
  ];
  const b = [
    -54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572,
  ];
  const c = [
    -0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968,
    2.938163982698783,
  ];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const low = 0.02425;
  const at = (list: number[], index: number) => list[index] as number;
  if (p < low) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (
      (((((at(c, 0) * q + at(c, 1)) * q + at(c, 2)) * q + at(c, 3)) * q + at(c, 4)) * q + at(c, 5)) /
      ((((at(d, 0) * q + at(d, 1)) * q + at(d, 2)) * q + at(d, 3)) * q + 1)
    );
  }
  if (p > 1 - low) return -inverseNormal(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return (
    ((((((at(a, 0) * r + at(a, 1)) * r + at(a, 2)) * r + at(a, 3)) * r + at(a, 4)) * r + at(a, 5)) * q) /
    (((((at(b, 0) * r + at(b, 1)) * r + at(b, 2)) * r + at(b, 3)) * r + at(b, 4)) * r + 1)
  );
}

/** A Beta(alpha, beta) draw, as X / (X + Y) of two gamma draws. */
export function sampleBeta(alpha: number, beta: number, random: Random): number {
  const x = sampleGamma(alpha, random);
  const y = sampleGamma(beta, random);
  return x + y > 0 ? x / (x + y) : alpha / (alpha + beta);
}

/** A Gamma(shape, 1) draw (Marsaglia and Tsang; shape < 1 by the boost U^(1/shape)). */
function sampleGamma(shape: number, random: Random): number {
  if (shape < 1) return sampleGamma(shape + 1, random) * random() ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const x = inverseNormal(Math.min(1 - 1e-12, Math.max(1e-12, random())));
    const v = (1 + c * x) ** 3;
    if (v <= 0) continue;
    const u = random();
    if (Math.log(Math.max(u, 1e-300)) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}
