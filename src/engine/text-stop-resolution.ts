/**
 * Which stop string ended a text-only completion. OpenAI-compatible servers trim the stop
 * string from the text. vLLM reports it in `stop_reason` and SGLang in `matched_stop` (a
 * string, or a token id / null for EOS); the official OpenAI API reports nothing, so it is
 * inferred, conservatively:
 * - the text ends with a requested stop string (a server that did not trim): that one, included;
 * - the server named no stop, finish 'stop', exactly one stop string was requested: that one,
 *   trimmed. EOS and the stop string cannot be told apart here; the dialect's
 *   `closedCodeAtEnd` then checks that a code block really is open, so an EOS after a final
 *   answer is not mistaken for a code block;
 * - several stop strings and no report: null (ambiguous; use a server that reports it).
 */

export type TextStopInput = {
  finishReason: 'stop' | 'length' | 'abort';
  text: string;
  requestedStops: readonly string[];
  /** `undefined` when the server has no such field; `null` or a number means EOS / a stop token. */
  reportedStop: string | number | null | undefined;
};

/** The matched stop string and whether `text` still ends with it. */
export function resolveTextStop(input: TextStopInput): { matchedStop: string | null; stopIncluded: boolean } {
  const { finishReason, text, requestedStops, reportedStop } = input;
  if (finishReason !== 'stop') return { matchedStop: null, stopIncluded: false };
  if (typeof reportedStop === 'string') {
    return { matchedStop: reportedStop, stopIncluded: false };
  }
  if (reportedStop !== undefined) return { matchedStop: null, stopIncluded: false };
  const untrimmed = requestedStops.find((stop) => stop.length > 0 && text.endsWith(stop));
  if (untrimmed !== undefined) return { matchedStop: untrimmed, stopIncluded: true };
  if (requestedStops.length === 1) return { matchedStop: requestedStops[0]!, stopIncluded: false };
  return { matchedStop: null, stopIncluded: false };
}
