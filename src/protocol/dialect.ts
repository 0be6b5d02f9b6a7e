/**
 * A dialect is the markup a model uses to interleave reasoning, code and interpreter output.
 * Dialects are data: each declares its stop strings, how it recognises a code block that just
 * closed, and how it renders a tool result. The agent loop never branches on a dialect's name.
 */
import type { ExecutionOutcome } from '../sandbox/types.ts';

export type DialectName = 'tags' | 'markdown';

export type RenderOptions = {
  /** Maximum characters of output kept; the middle is cut, with a marker saying how much. */
  maxChars?: number;
  /** Traceback lines kept for errors (the last ones). */
  tracebackLines?: number;
};

export interface Dialect {
  readonly name: DialectName;
  /** Strings that end a model turn because a code block closed (passed to the engine). */
  readonly stopStrings: readonly string[];
  /**
   * The code of the block that closes at the end of `text`, or null when the text does not end
   * with a closed code block. `matchedStop` is the stop string the engine reported, which the
   * engine may have trimmed from `text`.
   */
  closedCodeAtEnd(text: string, matchedStop: string | null): { code: string; stopTrimmed: boolean } | null;
  /**
   * The text appended after a code block: the interpreter output wrapped in the dialect's
   * markup. `stopTrimmed` says whether the engine trimmed the stop string, which the tool text
   * then restores, so that the concatenated text is always well formed.
   */
  renderToolResult(outcome: ExecutionOutcome, options?: RenderOptions & { stopTrimmed?: boolean }): string;
}
