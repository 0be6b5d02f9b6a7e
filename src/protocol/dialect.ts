/**
 * A dialect is the markup a model uses to interleave reasoning, code and interpreter output.
 * Dialects are data: each declares its stop strings, the markup of its blocks (which the one
 * response parser reads), how it recognises a code block that just closed, and how it renders
 * a tool result. The agent loop never branches on a dialect's name.
 */
import type { ExecutionOutcome } from '../shared/execution-outcome.ts';

export type DialectName = 'tags' | 'markdown';

export type RenderOptions = {
  /** Maximum characters of output kept; the middle is cut, with a marker saying how much. */
  maxChars?: number;
  /** Traceback lines kept for errors (the last ones). */
  tracebackLines?: number;
};

/** One kind of delimited block: where it opens and where it closes. */
export type BlockMarkup = {
  /** Matches an opening delimiter (a global regex; the parser sets `lastIndex`). */
  readonly open: RegExp;
  /** Matches the closing delimiter. */
  readonly close: RegExp;
  /** The opening delimiter as the dialect writes it. */
  readonly openText: string;
  /** The closing delimiter as the dialect writes it. */
  readonly closeText: string;
};

/**
 * The markup of a dialect as data. `reasoning` is an optional wrapper (`<think>…</think>`):
 * prose after it closes is the answer. `verbatim` blocks are other fenced blocks whose
 * content is prose but whose closer must be paired (a markdown ```` ```text ```` block).
 * `lineAnchored` says that delimiters only count at the start of a line, so a streaming
 * reader must wait for the end of a line before deciding what it is.
 */
export type DialectMarkup = {
  readonly reasoning: BlockMarkup | null;
  readonly code: BlockMarkup;
  readonly toolOutput: BlockMarkup;
  readonly verbatim: BlockMarkup | null;
  readonly lineAnchored: boolean;
};

/** A code block that closed at the end of generated text. */
export type ClosedCode = {
  /** The code to run: delimiters, the leading newline and trailing whitespace removed. */
  code: string;
  /** Whether the engine trimmed the stop string from the text. */
  stopTrimmed: boolean;
  /**
   * The exact text to put between the generated text and the interpreter output: the trimmed
   * stop string, if any, then the output block's opening (unless the model already wrote it).
   * Pass this object to `renderToolResult` so the concatenated text is always well formed.
   */
  outputOpening: string;
};

export interface Dialect {
  readonly name: DialectName;
  /** Strings that end a model turn because a code block closed (passed to the engine). */
  readonly stopStrings: readonly string[];
  /** The dialect's blocks, read by `parseResponse`. */
  readonly markup: DialectMarkup;
  /**
   * The code of the block that closes at the end of `text`, or null when the text does not end
   * with a closed code block. `matchedStop` is the stop string the engine reported, which the
   * engine may have trimmed from `text`.
   */
  closedCodeAtEnd(text: string, matchedStop: string | null): ClosedCode | null;
  /**
   * The text appended after a code block: the interpreter output wrapped in the dialect's
   * markup. `stopTrimmed` says whether the engine trimmed the stop string, which the tool text
   * then restores, so that the concatenated text is always well formed; `outputOpening` (from
   * `closedCodeAtEnd`) states the opening exactly and wins over `stopTrimmed`.
   */
  renderToolResult(
    outcome: ExecutionOutcome,
    options?: RenderOptions & { stopTrimmed?: boolean; outputOpening?: string },
  ): string;
}
