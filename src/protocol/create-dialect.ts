/**
 * Builds a `Dialect` from its data: stop strings and block markup. The behaviour (finding the
 * code block that just closed, rendering a tool result) is the same code for every dialect;
 * only the data differs, so nothing here branches on a dialect's name.
 */
import type { ExecutionOutcome } from '../shared/execution-outcome.ts';
import type { ClosedCode, Dialect, DialectMarkup, DialectName, RenderOptions } from './dialect.ts';
import { parseResponse } from './response-parser.ts';
import { renderOutcomeBody } from './tool-result.ts';

export type DialectSpec = {
  name: DialectName;
  /** The first stop string is the one restored when only `stopTrimmed` is known. */
  stopStrings: readonly [string, ...string[]];
  markup: DialectMarkup;
};

/** A dialect whose behaviour follows from `spec`. */
export function createDialect(spec: DialectSpec): Dialect {
  const { name, stopStrings, markup } = spec;
  const primaryStop = stopStrings[0];
  return {
    name,
    stopStrings,
    markup,
    closedCodeAtEnd(text: string, matchedStop: string | null): ClosedCode | null {
      const known = matchedStop !== null && stopStrings.includes(matchedStop) ? matchedStop : null;
      const stopTrimmed = known !== null && !text.endsWith(known);
      const full = stopTrimmed ? text + known : text;
      const parsed = parseResponse(full, markup);
      let last = parsed.parts.at(-1);
      let tailEnd = full.length;
      let outputOpened = false;
      // `…```\n```output` (the model opened the output block itself): skip the empty opener.
      if (last?.kind === 'tool-output' && !last.closed && last.text.trim() === '') {
        outputOpened = true;
        tailEnd = last.outerStart;
        last = parsed.parts.at(-2);
      }
      if (last === undefined || last.kind !== 'code' || !last.closed) return null;
      if (full.slice(last.outerEnd, tailEnd).trim() !== '') return null;
      const restored = stopTrimmed ? known : '';
      return {
        code: normalizeCode(last.text),
        stopTrimmed,
        outputOpening: restored + openingAfter(full, outputOpened, markup),
      };
    },
    renderToolResult(
      outcome: ExecutionOutcome,
      options: RenderOptions & { stopTrimmed?: boolean; outputOpening?: string } = {},
    ): string {
      const opening =
        options.outputOpening ??
        (options.stopTrimmed ? primaryStop : '') + openingAfter(primaryStop, false, markup);
      return `${opening}${renderOutcomeBody(outcome, options)}\n${markup.toolOutput.closeText}\n`;
    },
  };
}

/** What must follow `text` (ending with a closed code block) to open the output block. */
function openingAfter(text: string, outputOpened: boolean, markup: DialectMarkup): string {
  const newline = text.endsWith('\n') ? '' : '\n';
  return outputOpened ? newline : `${newline}${markup.toolOutput.openText}\n`;
}

/**
 * The code to run from a block's content: leading blank lines and trailing whitespace
 * removed, and a markdown fence inside the block (`<code>\n```python\n…\n```\n</code>`) unwrapped.
 */
export function normalizeCode(content: string): string {
  const code = content.replace(/^(?:[ \t]*\r?\n)+/, '').trimEnd();
  const fenced = /^```[ \t]*(?:python3?|py)?[ \t]*\r?\n([\s\S]*?)\r?\n?```$/.exec(code);
  return fenced ? (fenced[1] ?? '').trimEnd() : code;
}
