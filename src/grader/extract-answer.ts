/**
 * Final-answer extraction from a full model response or a bare answer, in this order:
 *   1. the last closed `\boxed{…}` / `\fbox{…}` (one linear pass of brace matching, so a
 *      megabyte of unclosed boxes costs one scan);
 *   2. the last answer phrase ("the final answer is", "the answer is", "Final Answer:",
 *      "Answer:"): the math in what follows it on its line, else the value after a last
 *      " is " in that sentence ("The largest $n$ is 34." → 34), else the sentence;
 *   3. the last math environment (`$…$`, `\(…\)` on one line; `$$…$$`, `\[…\]` also across
 *      lines), unless a number in prose follows it;
 *   4. a short one-line response that is not prose, taken as the answer itself;
 *   5. in prose, the last number (thousands separators, a decimal point or comma, with units,
 *      currency or `%` around it: "which is 1,000.99€" → 1,000.99);
 *   6. a short one-line response (a word answer such as "Evelyn").
 * Double-escaped LaTeX as stored in some JSON datasets (`\\frac`) is un-escaped first.
 */
import { lastBox } from '../shared/boxed-answer.ts';

export type Extraction = { answer: string; source: 'boxed' | 'phrase' | 'math' | 'bare' | 'number' };

/** Responses longer than this are cut to their last part before extraction. */
export const MAX_RESPONSE_CHARS = 2_000_000;
/** A response this short, without a box or an answer phrase, may be taken as a bare answer. */
const MAX_BARE_CHARS = 300;
/** Answer phrases, math environments and numbers are looked for in this many last characters. */
const TAIL_CHARS = 20_000;

const NO_MATH: { spans: MathSpan[]; malformed: MathSpan[] } = { spans: [], malformed: [] };

/** The answer in a response, or null when there is none. */
export function extractAnswer(response: string): Extraction | null {
  const cut = response.length > MAX_RESPONSE_CHARS ? response.slice(-MAX_RESPONSE_CHARS) : response;
  const text = unescapeDoubled(cut);
  // A reasoning model states its answer after its thinking: an answer found after the last
  // `</think>` counts, an intermediate one inside the thinking does not. Only a number picked
  // from prose after it ("it counts 3-digit numbers") gives way, to a box in the thinking.
  const thinkEnd = text.lastIndexOf('</think>');
  if (thinkEnd === -1) return extractFrom(text);
  const final = extractFrom(text.slice(thinkEnd + '</think>'.length));
  if (final !== null && final.source !== 'number') return final;
  const whole = extractFrom(text);
  return final !== null && whole?.source !== 'boxed' ? final : whole;
}

/** The extraction steps on an un-escaped text. */
function extractFrom(text: string): Extraction | null {
  const boxed = lastBox(text);
  if (boxed !== null) return { answer: withAdjacentBoxes(text, boxed), source: 'boxed' };
  const tail = text.length > TAIL_CHARS ? text.slice(-TAIL_CHARS) : text;
  const phrase = /answer/i.test(tail) ? lastAnswerPhrase(tail) : null;
  if (phrase !== null) return { answer: phrase, source: 'phrase' };
  const { spans, malformed } = /\$|\\[([]/.test(tail) ? scanMath(tail) : NO_MATH;
  const math = spans.at(-1) ?? null;
  const prose = isProse(without(tail, spans));
  if (math !== null) {
    const after = prose ? lastValue(tail.slice(math.end)) : null;
    if (after !== null) return { answer: after, source: 'number' };
    if (math.content.trim() !== '')
      return { answer: joinedMath(tail, spans, spans.length - 1), source: 'math' };
  }
  const bare = text.trim();
  const short = bare !== '' && bare.length <= MAX_BARE_CHARS && !bare.includes('\n');
  if (short && !prose) return { answer: bare, source: 'bare' };
  // Not from inside inline math that spans lines (malformed, so not an answer).
  const number = prose ? lastValue(without(tail, malformed)) : null;
  if (number !== null) return { answer: number, source: 'number' };
  return short ? { answer: bare, source: 'bare' } : null;
}

/**
 * `\\frac{1}{5}` → `\frac{1}{5}`: when every run of backslashes has even length and a doubled
 * one starts a LaTeX command, the text was escaped twice; every run is halved.
 */
function unescapeDoubled(text: string): string {
  if (!text.includes('\\\\')) return text;
  if (/(?<!\\)(?:\\\\)*\\(?!\\)/.test(text)) return text;
  if (
    !/(?<!\\)\\\\(?:frac|dfrac|tfrac|sqrt|left|right|boxed|pi|cdot|times|infty|begin|end|text|le|ge|ne)(?![A-Za-z])/.test(
      text,
    )
  ) {
    return text;
  }
  return text.replace(/\\\\/g, '\\');
}

/** Unit and percent words that may follow a number without making the text prose. */
const QUIET_WORDS =
  /^(?:percent|percentage|pct|degrees?|units?|cm|mm|km|meters?|metres?|inches|feet|ft|miles?|seconds?|minutes?|hours?|days?|weeks?|years?|dollars?|cents?|euros?|grams?|kg|liters?|litres?|sq|square|cubic|sin|cos|tan|cot|sec|csc|log|ln|exp|sqrt|and|or)$/i;

/** Prose: a word of three or more letters that is neither a LaTeX command nor a unit. */
function isProse(text: string): boolean {
  const words = text.replace(/\\[A-Za-z]+\s*\{[A-Za-z*\s]*\}/g, ' ');
  for (const match of words.matchAll(/(?<![\\A-Za-z])[A-Za-z]{3,}(?![A-Za-z])/g)) {
    if (!QUIET_WORDS.test(match[0])) return true;
  }
  return false;
}

/**
 * A number standing alone (not inside a word such as `AZYUK2A`): thousands groups, a decimal
 * point or comma, a sign, a simple fraction `a/b`.
 */
const NUMBER =
  /(?<![A-Za-z0-9.,\\])[-−]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?(?:\/\d+)?|\.\d+)(?![\d/])/g;

/** The last value in prose: a bracketed tuple that no number follows, else the last number. */
function lastValue(text: string): string | null {
  return lastTuple(text) ?? lastNumber(text);
}

/**
 * The last bracketed tuple in prose (`The point is (2, \frac{\pi}{3}).`), when no number
 * follows it: brackets matched backwards from the last closing one (at most 300 characters),
 * a top-level comma, a digit, and no prose inside. Null otherwise.
 */
function lastTuple(text: string): string | null {
  const close = Math.max(text.lastIndexOf(')'), text.lastIndexOf(']'));
  if (close === -1 || lastNumber(text.slice(close + 1)) !== null) return null;
  let depth = 0;
  let comma = false;
  for (let index = close; index >= Math.max(0, close - 300); index--) {
    const character = text[index]!;
    if (character === ')' || character === ']') depth++;
    else if (character === '(' || character === '[') depth--;
    else if (character === ',' && depth === 1) comma = true;
    if (depth > 0) continue;
    const tuple = text.slice(index, close + 1);
    return comma && /\d/.test(tuple) && !isProse(tuple) ? tuple : null;
  }
  return null;
}

function lastNumber(text: string): string | null {
  let last: string | null = null;
  for (const match of text.matchAll(NUMBER)) last = match[0];
  return last === null ? null : last.replace('−', '-');
}

type MathSpan = { start: number; end: number; content: string };

/**
 * The math environments of `text` in one left-to-right pass, and the malformed ones (inline
 * math whose closing delimiter is on a later line). An opening whose closing cannot be found
 * ends the search for that kind (no later one can close either), and a lone `$` is a currency
 * sign; so every character is read a bounded number of times.
 */
function scanMath(text: string): { spans: MathSpan[]; malformed: MathSpan[] } {
  const spans: MathSpan[] = [];
  const malformed: MathSpan[] = [];
  const closed = { display: true, bracket: true, paren: true, dollar: true };
  let index = 0;
  const take = (open: number, close: number, width: number, inline: boolean) => {
    const span = { start: open, end: close + width, content: text.slice(open + width, close) };
    if (inline && span.content.includes('\n')) malformed.push(span);
    else spans.push(span);
    index = close + width;
  };
  while (index < text.length) {
    const character = text[index]!;
    if (character === '\\') {
      const next = text[index + 1];
      const kind = next === '[' ? 'bracket' : next === '(' ? 'paren' : null;
      if (kind === null || !closed[kind]) {
        index += 2; // an escaped character (`\$` included), or a kind that can no longer close
        continue;
      }
      const close = text.indexOf(next === '[' ? '\\]' : '\\)', index + 2);
      if (close === -1) {
        closed[kind] = false;
        index += 2;
      } else take(index, close, 2, kind === 'paren');
      continue;
    }
    if (character === '$') {
      const display = text[index + 1] === '$';
      const kind = display ? 'display' : 'dollar';
      const close = closed[kind]
        ? display
          ? text.indexOf('$$', index + 2)
          : nextDollar(text, index + 1)
        : -1;
      if (close === -1) {
        closed[kind] = false;
        index += display ? 2 : 1;
      } else take(index, close, display ? 2 : 1, !display);
      continue;
    }
    index++;
  }
  return { spans, malformed };
}

/** What may stand between math environments that list one answer: `$4$ and $9$`, `$1$, $2$`. */
const JOINS_MATH = /^\s*[,;]?\s*(?:(?:and|or)\s+)?$/i;

/**
 * The content of `spans[last]` with the environments before it that are joined to it by only
 * spacing, `,`, `;`, `and` or `or` (`$4$ and $9$` → `4, 9`), at most 16.
 */
function joinedMath(text: string, spans: readonly MathSpan[], last: number): string {
  const items = [spans[last]!.content.trim()];
  for (let index = last; index > 0 && items.length < 16; index--) {
    const between = text.slice(spans[index - 1]!.end, spans[index]!.start);
    const content = spans[index - 1]!.content.trim();
    if (between === '' || !JOINS_MATH.test(between) || content === '') break;
    items.unshift(content);
  }
  return items.join(', ');
}

/** The next unescaped `$` from `from`, or -1. */
function nextDollar(text: string, from: number): number {
  for (let index = from; index < text.length; index++) {
    const character = text[index];
    if (character === '\\') index++;
    else if (character === '$') return index;
  }
  return -1;
}

/** `text` with the given spans replaced by spaces. */
function without(text: string, spans: readonly MathSpan[]): string {
  let result = '';
  let position = 0;
  for (const span of spans) {
    result += `${text.slice(position, span.start)} `;
    position = span.end;
  }
  return result + text.slice(position);
}

/**
 * Boxes before the last box, with only spacing, `,`, `;`, `$`, `\(`/`\)`, `\quad`, `\text{…}` or
 * a few words including `and` / `or` between (`\boxed{3} \quad \text{and} \quad \boxed{4}`,
 * `\(\boxed{3}\) and \(\boxed{-1}\)`, `\boxed{3} papers and \boxed{4} bins`), are one answer
 * with it: `3, 4`. Single characters in the separator pattern keep the match linear; a box's
 * braces are matched backwards from its closing brace, over a bounded window.
 */
const SEPARATOR_BEFORE = /(?:[\s,;$]|\\q?quad(?![A-Za-z])|\\[,;: ()[\]]|\\text\s*\{[^{}]*\}|[A-Za-z])*$/;
/** How far back a box before a box may start. */
const BOX_WINDOW_CHARS = 2_000;

function withAdjacentBoxes(text: string, last: { content: string; start: number }): string {
  const items = [last.content.trim()];
  let end = last.start;
  for (let count = 0; count < 16; count++) {
    const separator = SEPARATOR_BEFORE.exec(text.slice(Math.max(0, end - 300), end))?.[0] ?? '';
    if (!joinsBoxes(separator)) break;
    const box = boxEndingAt(text, end - separator.length);
    if (box === null) break;
    items.unshift(box.content.trim());
    end = box.start;
  }
  return items.join(', ');
}

/** The `\boxed{…}` (or `\fbox{…}`) whose closing brace is just before `end`, or null. */
function boxEndingAt(text: string, end: number): { content: string; start: number } | null {
  if (text[end - 1] !== '}') return null;
  let depth = 0;
  for (let index = end - 1; index >= Math.max(0, end - BOX_WINDOW_CHARS); index--) {
    const character = text[index];
    if (character !== '{' && character !== '}') continue;
    if (text[index - 1] === '\\' && text[index - 2] !== '\\') continue; // `\{`, `\}`
    depth += character === '}' ? 1 : -1;
    if (depth > 0) continue;
    const command = /\\(?:boxed|fbox)\s*$/.exec(text.slice(Math.max(0, index - 16), index));
    if (command === null) return null;
    return { content: text.slice(index + 1, end - 1), start: index - command[0].length };
  }
  return null;
}

/** A separator of listed boxes: no words, or at most four words of which one is `and` / `or`. */
function joinsBoxes(separator: string): boolean {
  const words = separator.replace(/\\q?quad|\\text/g, ' ').match(/[A-Za-z]+/g) ?? [];
  if (words.length === 0) return true;
  return words.length <= 4 && words.some((word) => /^(?:and|or)$/i.test(word));
}

const PHRASES = /(?:final answer|the answer)\s*(?:is|:|=)\s*:?|\banswer\s*:/gi;

/** What follows the last answer phrase on its line, reduced to the answer. */
function lastAnswerPhrase(text: string): string | null {
  let end = -1;
  for (const match of text.matchAll(PHRASES)) end = match.index + match[0].length;
  if (end === -1) return null;
  const lineEnd = text.indexOf('\n', end);
  // `**Answer:** 42`: Markdown emphasis around the phrase is not part of the answer.
  let answer = text
    .slice(end, lineEnd === -1 ? undefined : lineEnd)
    .replace(/^[\s*_]+/, '')
    .trim();
  const { spans } = scanMath(answer);
  if (spans[0]?.start === 0) {
    // `$x$.` / `\(x\)` right after the phrase: that environment is the answer (with the ones
    // joined to it by `and` / `or`: `$3$ or $4$`).
    let last = 0;
    while (last + 1 < spans.length && JOINS_MATH.test(answer.slice(spans[last]!.end, spans[last + 1]!.start)))
      last++;
    answer = joinedMath(answer, spans, last);
  } else {
    answer = answer.replace(/\.\s.*$/, '').replace(/[.\s]+$/, '');
    // "The largest $n$ is 34": the value after the sentence's last " is ".
    const is = /^(?:.*\s)?(?:is|are|equals|=)\s+(.+)$/s.exec(answer);
    if (is && /[A-Za-z]{3,}/.test(answer.slice(0, answer.length - is[1]!.length))) answer = is[1]!;
    const inner = scanMath(answer).spans;
    if (inner.length === 1 && without(answer, inner).trim() === '') answer = inner[0]!.content;
  }
  answer = answer.replace(/[.\s]+$/, '').trim();
  return answer === '' ? null : answer.slice(0, 1_000);
}
