/**
 * A stop string split across two engine calls. Engines match stop strings within one
 * request's output only, so when a call ends by `length` in the middle of `</code>` and the
 * next call writes the rest, no engine reports it. The loop joins the two: it keeps the new
 * tokens up to where the stop string completes (cut at a token boundary, never re-tokenized)
 * and treats the call as stopped there.
 */
import type { Tokenizer } from '../engine/tokenizer.ts';
import type { GenerateResult } from '../engine/types.ts';

/**
 * The result cut where a stop string begun at the end of `previousText` completes, or null
 * when no stop string straddles the boundary.
 */
export function joinSplitStop(
  previousText: string,
  result: GenerateResult,
  stops: readonly string[],
  tokenizer: Tokenizer | null,
): GenerateResult | null {
  for (const stop of stops) {
    for (let head = Math.min(stop.length - 1, previousText.length); head >= 1; head--) {
      const rest = stop.slice(head);
      if (!previousText.endsWith(stop.slice(0, head)) || !result.text.startsWith(rest)) continue;
      const cut = cutAfter(result, rest, tokenizer);
      if (cut === null) continue;
      return { ...result, ...cut, finishReason: 'stop', matchedStop: stop, stopIncluded: true };
    }
  }
  return null;
}

function cutAfter(
  result: GenerateResult,
  rest: string,
  tokenizer: Tokenizer | null,
): Pick<GenerateResult, 'text' | 'tokenIds' | 'logprobs'> | null {
  if (result.tokenIds === null || tokenizer === null) {
    return { text: result.text.slice(0, rest.length), tokenIds: result.tokenIds, logprobs: result.logprobs };
  }
  // The fewest leading tokens that spell the rest of the stop string (a few tokens at most).
  for (let count = 1; count <= result.tokenIds.length; count++) {
    const text = tokenizer.decode(result.tokenIds.slice(0, count));
    if (text.length >= rest.length) {
      if (!text.startsWith(rest)) return null;
      return {
        text,
        tokenIds: result.tokenIds.slice(0, count),
        logprobs: result.logprobs === null ? null : result.logprobs.slice(0, count),
      };
    }
  }
  return null;
}
