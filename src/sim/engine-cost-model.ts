/**
 * The cost model of one engine replica: a decode iteration over a batch of `B` sequences
 * holding `S` context tokens in all costs `a + b·B + c·S` ms (read the weights once, compute
 * per sequence, read every sequence's KV), and a prefill costs `p` ms per token computed.
 * Constants for the built-in workload and where they come from: docs/simulation.md.
 */
import { z } from 'zod';

export const costModelSchema = z
  .object({
    /** `a`: ms per decode iteration, whatever the batch (weights read once). */
    decodeBaseMs: z.number().positive(),
    /** `b`: ms per sequence in the batch per iteration (its matmul FLOPs, sampling). */
    decodePerSequenceMs: z.number().nonnegative(),
    /** `c`: ms per context token held by the batch per iteration (KV read by attention). */
    decodePerContextTokenMs: z.number().nonnegative(),
    /** `p`: ms per prompt token prefilled (not found in the prefix cache). */
    prefillPerTokenMs: z.number().nonnegative(),
  })
  .strict();

export type CostModel = z.infer<typeof costModelSchema>;

/**
 * Time for `iterations` decode iterations of a batch of `batch` sequences starting at
 * `contextTokens` context tokens in all; each iteration adds one token per sequence.
 */
export function decodeMs(model: CostModel, batch: number, contextTokens: number, iterations: number): number {
  const perIteration =
    model.decodeBaseMs + model.decodePerSequenceMs * batch + model.decodePerContextTokenMs * contextTokens;
  return (
    iterations * perIteration + (model.decodePerContextTokenMs * batch * iterations * (iterations - 1)) / 2
  );
}

/** Whole iterations finished within `elapsedMs` of a chunk that began with that batch (inverse of `decodeMs`). */
export function iterationsWithin(
  model: CostModel,
  batch: number,
  contextTokens: number,
  elapsedMs: number,
): number {
  if (elapsedMs <= 0) return 0;
  const first =
    model.decodeBaseMs + model.decodePerSequenceMs * batch + model.decodePerContextTokenMs * contextTokens;
  const growth = model.decodePerContextTokenMs * batch;
  let estimate: number;
  if (growth === 0) estimate = first > 0 ? Math.floor(elapsedMs / first) : Number.MAX_SAFE_INTEGER;
  else {
    // growth/2·k² + (first − growth/2)·k − elapsed = 0
    const half = growth / 2;
    const linear = first - half;
    estimate = Math.floor((-linear + Math.sqrt(linear * linear + 4 * half * elapsedMs)) / (2 * half));
  }
  // Guard the float root against an off-by-one either way.
  while (estimate > 0 && decodeMs(model, batch, contextTokens, estimate) > elapsedMs) estimate--;
  while (decodeMs(model, batch, contextTokens, estimate + 1) <= elapsedMs) estimate++;
  return estimate;
}
