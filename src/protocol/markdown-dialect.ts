/**
 * The markdown dialect (ToRA / ZeroTIR style): code in a ```` ```python ```` fence, the
 * interpreter's output in a ```` ```output ```` fence after it. Fences count only at the start
 * of a line. Stop strings: `"\n```\n"` (the closing fence and its newline, which an opening
 * fence never matches because its info string follows the backticks) and `"```output"` (for
 * models that open the output block themselves without a newline after the closing fence).
 */
import { createDialect } from './create-dialect.ts';

/** A closing fence: a line holding only three backticks (up to three spaces of indent). */
const FENCE_CLOSE = /(?<=^|\n)[ \t]{0,3}```[ \t]*(?=\r?\n|$)/g;

function fence(info: string): RegExp {
  return new RegExp(`(?<=^|\\n)[ \\t]{0,3}\`\`\`[ \\t]*(?:${info})[ \\t]*(?:\\r?\\n|$)`, 'g');
}

/** ```` ```python\ncode\n``` ```` then ```` ```output\noutput\n``` ````; the answer in `\boxed{}`. */
export const markdownDialect = createDialect({
  name: 'markdown',
  stopStrings: ['\n```\n', '```output'],
  markup: {
    reasoning: null,
    code: { open: fence('python3?|py'), close: FENCE_CLOSE, openText: '```python', closeText: '```' },
    toolOutput: { open: fence('output'), close: FENCE_CLOSE, openText: '```output', closeText: '```' },
    // Any other fence (```` ``` ````, ```` ```text ````): prose whose closing fence is paired.
    verbatim: { open: fence('[^`\\s][^`\\n]*|'), close: FENCE_CLOSE, openText: '```', closeText: '```' },
    lineAnchored: true,
  },
});
