/**
 * The cost model of one engine replica: a decode iteration over a batch of `B` sequences
 * holding `S` context tokens in all costs `a + b·B + c·S` ms (read the weights once, compute
 * per sequence, read every sequence's KV), plus, for a mixture of experts, `e·(1 − (1 − k/E)^B)`
 * (the expert weights the batch touches: each sequence routes to `k` of `E` experts a layer).
 * A prefill of the tokens from position `s` to `e` costs `p·(e − s) + q·(e² − s²)/2` ms: `p`
 * per token (its matmuls), `q` per token per token before it (attention's FLOPs grow with
 * the context). Constants for the built-in workloads and where they come from:
 * docs/simulation.md.
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
    /** `q`: ms per prefilled token per token of context before it (attention); absent: 0. */
    prefillPerContextTokenMs: z.number().nonnegative().optional(),
    /** ms per token to load KV back from a host-memory tier (PCIe); needed by configurations with one. */
    hostLoadPerTokenMs: z.number().nonnegative().optional(),
    /** A mixture of experts: `e` ms to read every expert's weights, `k` of `E` experts per token a layer. */
    experts: z
      .object({
        readAllMs: z.number().nonnegative(),
        active: z.number().int().positive(),
        total: z.number().int().positive(),
      })
      .strict()
      .refine((experts) => experts.active <= experts.total, 'active experts must not exceed total')
      .optional(),
  })
  .strict();

export type CostModel = z.infer<typeof costModelSchema>;

/** ms of one decode iteration that do not grow with context: `a + b·B` plus the experts `B` sequences touch. */
function perIterationBaseMs(model: CostModel, batch: number): number {
  const experts = model.experts;
  const expertMs =
    experts === undefined ? 0 : experts.readAllMs * (1 - (1 - experts.active / experts.total) ** batch);
  return model.decodeBaseMs + model.decodePerSequenceMs * batch + expertMs;
}

/** Time to prefill the tokens from position `fromTokens` (already computed) to `toTokens`. */
export function prefillMs(model: CostModel, fromTokens: number, toTokens: number): number {
  const tokens = Math.max(0, toTokens - fromTokens);
  const attention = model.prefillPerContextTokenMs ?? 0;
  return tokens * model.prefillPerTokenMs + (attention * (toTokens * toTokens - fromTokens * fromTokens)) / 2;
}

/**
 * Time for `iterations` decode iterations of a batch of `batch` sequences starting at
 * `contextTokens` context tokens in all; each iteration adds one token per sequence.
 */
export function decodeMs(model: CostModel, batch: number, contextTokens: number, iterations: number): number {
  const perIteration = perIterationBaseMs(model, batch) + model.decodePerContextTokenMs * contextTokens;
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
  const first = perIterationBaseMs(model, batch) + model.decodePerContextTokenMs * contextTokens;
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
