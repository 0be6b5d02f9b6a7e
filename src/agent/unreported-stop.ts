/**
 * The stop an engine could not report, decided from the text. The official OpenAI API trims
 * the stop string and answers `finish_reason: "stop"` both for it and for the end of the
 * answer (the engine result then has `stopUnreported`). The text decides: a stop that leaves a
 * code block open was that block's closing stop string; anything else is the end of the
 * answer (EOS), after which the trajectory never calls the engine again. The one case this
 * reads differently from a reporting server: a stop string that closed a non-code block
 * (a markdown ```` ```text ```` fence) ends the answer here.
 */
import type { GenerateResult } from '../engine/types.ts';
import type { Dialect } from '../protocol/dialect.ts';

/**
 * `result` with its stop decided: the dialect stop string that closes a code block left open at
 * the end of `turnText + result.text`, else EOS (`matchedStop: null`). Results the server
 * reported in full are returned as they are.
 */
export function resolveUnreportedStop(
  turnText: string,
  result: GenerateResult,
  dialect: Dialect,
): GenerateResult {
  if (result.stopUnreported !== true || result.finishReason !== 'stop' || result.matchedStop !== null) {
    return result;
  }
  const text = turnText + result.text;
  const closing = dialect.stopStrings.find((stop) => dialect.closedCodeAtEnd(text, stop) !== null);
  return { ...result, matchedStop: closing ?? null, stopIncluded: false, stopUnreported: false };
}
