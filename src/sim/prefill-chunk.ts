/**
 * Chunked prefill (vLLM's chunked prefill; SGLang's `--chunked-prefill-size` with
 * `--enable-mixed-chunk`): an engine iteration prefills at most `chunkTokens` prompt tokens,
 * taken from the pending prefills in arrival order (one long prompt is split over iterations;
 * short ones share an iteration), beside the decode batch's one token per sequence. A piece
 * from position `s` to `t` costs what the cost model charges for it (`prefillMs`: attention
 * over the context before it), so a prompt's chunks cost in all what its whole prefill costs;
 * what changes is that the decode batch goes on between them.
 */
import { type CostModel, prefillMs } from './engine-cost-model.ts';

/** A prefill still to run: positions `from` to `to` of a context, and a load from host memory not yet paid. */
export type PendingPrefill = { from: number; to: number; loadMs: number };

/** The next iteration's chunk: tokens taken from each pending prefill in order (zeros omitted) and their cost. */
export type PrefillChunk = { tokens: number[]; ms: number };

export function nextPrefillChunk(
  pending: readonly PendingPrefill[],
  chunkTokens: number,
  model: CostModel,
): PrefillChunk {
  const tokens: number[] = [];
  let budget = chunkTokens;
  let ms = 0;
  for (const prefill of pending) {
    if (budget <= 0) break;
    const take = Math.min(budget, prefill.to - prefill.from);
    tokens.push(take);
    budget -= take;
    ms += prefill.loadMs + prefillMs(model, prefill.from, prefill.from + take);
  }
  return { tokens, ms };
}
