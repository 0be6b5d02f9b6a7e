/**
 * Which stop string ended a text-only completion. OpenAI-compatible servers trim the stop
 * string from the text. vLLM reports it in `stop_reason` and SGLang in `matched_stop` (a
 * string, or a token id / null for EOS). The official OpenAI API reports nothing, and its
 * `finish_reason` is `"stop"` both for a stop string and for the end of the answer, so the
 * client does not guess: it says what it saw and leaves the decision to whoever can read the
 * text (the agent loop asks the dialect whether a code block is left open):
 * - a reported stop string: that one, trimmed;
 * - a reported null or token id: EOS;
 * - nothing reported, the text ends with a requested stop string (a server that did not trim):
 *   that one, included;
 * - nothing reported otherwise: no matched stop, `stopUnreported` true (when stops were sent).
 */

export type TextStopInput = {
  finishReason: 'stop' | 'length' | 'abort';
  text: string;
  requestedStops: readonly string[];
  /** `undefined` when the server has no such field; `null` or a number means EOS / a stop token. */
  reportedStop: string | number | null | undefined;
};

export type TextStop = {
  matchedStop: string | null;
  /** Whether `text` still ends with `matchedStop`. */
  stopIncluded: boolean;
  /** Set when a trimmed stop string and EOS cannot be told apart from the answer alone. */
  stopUnreported?: true;
};

/** The matched stop string and whether `text` still ends with it, or that the server did not say. */
export function resolveTextStop(input: TextStopInput): TextStop {
  const { finishReason, text, requestedStops, reportedStop } = input;
  if (finishReason !== 'stop') return { matchedStop: null, stopIncluded: false };
  if (typeof reportedStop === 'string') {
    return { matchedStop: reportedStop, stopIncluded: false };
  }
  if (reportedStop !== undefined) return { matchedStop: null, stopIncluded: false };
  const untrimmed = requestedStops.find((stop) => stop.length > 0 && text.endsWith(stop));
  if (untrimmed !== undefined) return { matchedStop: untrimmed, stopIncluded: true };
  if (requestedStops.some((stop) => stop.length > 0)) {
    return { matchedStop: null, stopIncluded: false, stopUnreported: true };
  }
  return { matchedStop: null, stopIncluded: false };
}
