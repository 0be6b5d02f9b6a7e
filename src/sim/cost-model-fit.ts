/**
 * Fits the engine cost model to measurements: decode iterations (batch, context tokens held by
 * the batch, ms per iteration) by least squares on `a + b·B + c·S`, and prefill requests
 * (prompt tokens, ms) by a line whose slope is `p` (the intercept, HTTP and one decode
 * iteration, is reported and not part of the model). Negative coefficients, which noise can
 * produce, are set to zero and the others refitted.
 */
import type { CostModel } from './engine-cost-model.ts';

export type DecodePoint = { batch: number; contextTokens: number; iterationMs: number };
export type PrefillPoint = { promptTokens: number; ms: number };

export type CostModelFit = { costModel: CostModel; prefillInterceptMs: number; decodeRmsErrorMs: number };

export function fitCostModel(decode: readonly DecodePoint[], prefill: readonly PrefillPoint[]): CostModelFit {
  const rows = decode.map((point) => [1, point.batch, point.contextTokens]);
  const targets = decode.map((point) => point.iterationMs);
  const active = [true, true, true];
  let coefficients = [0, 0, 0];
  for (let pass = 0; pass < 3; pass++) {
    coefficients = leastSquares(rows, targets, active);
    const negative = coefficients.findIndex((value, index) => active[index] && value < 0 && index > 0);
    if (negative < 0) break;
    active[negative] = false;
  }
  const [a = 0, b = 0, c = 0] = coefficients;
  const line = leastSquares(
    prefill.map((point) => [1, point.promptTokens]),
    prefill.map((point) => point.ms),
    [true, true],
  );
  const residuals = decode.map(
    (point, index) =>
      (rows[index] as number[]).reduce((sum, x, k) => sum + x * (coefficients[k] ?? 0), 0) -
      point.iterationMs,
  );
  return {
    costModel: {
      decodeBaseMs: Math.max(a, 1e-6),
      decodePerSequenceMs: b,
      decodePerContextTokenMs: c,
      prefillPerTokenMs: Math.max(0, line[1] ?? 0),
    },
    prefillInterceptMs: line[0] ?? 0,
    decodeRmsErrorMs: Math.sqrt(residuals.reduce((sum, r) => sum + r * r, 0) / Math.max(1, residuals.length)),
  };
}

/** Ordinary least squares over the active columns (normal equations, Gaussian elimination). */
function leastSquares(
  rows: readonly number[][],
  targets: readonly number[],
  active: readonly boolean[],
): number[] {
  const columns = active.flatMap((on, index) => (on ? [index] : []));
  const size = columns.length;
  const matrix = Array.from({ length: size }, () => new Array<number>(size + 1).fill(0));
  rows.forEach((row, r) => {
    for (let i = 0; i < size; i++) {
      const xi = row[columns[i] as number] as number;
      for (let j = 0; j < size; j++)
        (matrix[i] as number[])[j] =
          ((matrix[i] as number[])[j] as number) + xi * (row[columns[j] as number] as number);
      (matrix[i] as number[])[size] = ((matrix[i] as number[])[size] as number) + xi * (targets[r] as number);
    }
  });
  for (let pivot = 0; pivot < size; pivot++) {
    let best = pivot;
    for (let r = pivot + 1; r < size; r++)
      if (
        Math.abs((matrix[r] as number[])[pivot] as number) >
        Math.abs((matrix[best] as number[])[pivot] as number)
      )
        best = r;
    [matrix[pivot], matrix[best]] = [matrix[best] as number[], matrix[pivot] as number[]];
    const head = matrix[pivot] as number[];
    const scale = head[pivot] as number;
    if (scale === 0) continue;
    for (let c = pivot; c <= size; c++) head[c] = (head[c] as number) / scale;
    for (let r = 0; r < size; r++) {
      if (r === pivot) continue;
      const row = matrix[r] as number[];
      const factor = row[pivot] as number;
      for (let c = pivot; c <= size; c++) row[c] = (row[c] as number) - factor * (head[c] as number);
    }
  }
  const result = new Array<number>(active.length).fill(0);
  columns.forEach((column, i) => {
    result[column] = (matrix[i] as number[])[size] as number;
  });
  return result;
}
