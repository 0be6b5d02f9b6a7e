/**
 * The response parser: segments a model response (or any prefix of one) into reasoning, code,
 * tool-output and answer parts, driven by a dialect's markup. It never throws on malformed
 * text: unclosed blocks end at the end of the text, stray closers and nested openers stay
 * in the prose, and each oddity is reported as a format issue.
 */
import { extractBoxedAnswer } from '../shared/boxed-answer.ts';
import type { BlockMarkup, DialectMarkup } from './dialect.ts';

export type ResponsePartKind = 'reasoning' | 'code' | 'tool-output' | 'answer';

/** A run of the response; `text` excludes the delimiters, `start`/`end` bound the text. */
export type ResponsePart = {
  kind: ResponsePartKind;
  text: string;
  start: number;
  end: number;
  /** Where the part begins and ends with its delimiters (equal to start/end for prose). */
  outerStart: number;
  outerEnd: number;
  /** False for a block whose closing delimiter never came. Prose is always closed. */
  closed: boolean;
};

export type FormatIssue = {
  kind: 'unclosed' | 'stray-closer' | 'nested-opener' | 'empty-code';
  /** Offset of the delimiter concerned. */
  at: number;
  /** The delimiter as written. */
  markup: string;
};

/** Where the reasoning wrapper stands: not seen yet, open, or closed (prose is now answer). */
export type ReasoningState = 'none' | 'open' | 'closed';

export type ParsedResponse = {
  parts: ResponsePart[];
  issues: FormatIssue[];
  /** The last `\boxed{}` in the prose (code and interpreter output excluded), or null. */
  answer: string | null;
  /**
   * The latest point from which parsing again (`from: offset`, same `reasoning`) yields the
   * same parts: a streaming reader re-parses from here as text arrives instead of from 0.
   */
  resume: { offset: number; reasoning: ReasoningState };
};

export type ParseOptions = {
  /** Start parsing here, in prose (a `resume.offset` of an earlier parse); default 0. */
  from?: number;
  /** The reasoning state at `from`; default 'none'. */
  reasoning?: ReasoningState;
};

type BlockKind = 'code' | 'tool-output' | 'verbatim';
type Token =
  | { role: 'open'; block: BlockKind; markup: BlockMarkup }
  | { role: 'reasoning-open' | 'reasoning-close' | 'stray-close' };
type Match = { index: number; end: number; text: string };

/** Parses `text` with `markup`; linear in the text's length. */
export function parseResponse(
  text: string,
  markup: DialectMarkup,
  options: ParseOptions = {},
): ParsedResponse {
  const { from = 0 } = options;
  const tokens = outsideTokens(markup);
  const finder = new MatchFinder(text);
  const parts: ResponsePart[] = [];
  const issues: FormatIssue[] = [];
  let reasoning: ReasoningState = options.reasoning ?? 'none';
  let proseStart = from;
  let position = from;
  let resume = { offset: from, reasoning };

  const flushProse = (end: number) => {
    const prose = text.slice(proseStart, end);
    if (prose.trim() === '') return;
    const kind = reasoning === 'closed' ? 'answer' : 'reasoning';
    parts.push({
      kind,
      text: prose,
      start: proseStart,
      end,
      outerStart: proseStart,
      outerEnd: end,
      closed: true,
    });
  };

  while (position <= text.length) {
    const next = earliest(finder, tokens, position);
    if (next === null) break;
    const { token, match } = next;
    if (token.role === 'open') {
      const close = finder.find(token.markup.close, match.end);
      const end = close?.index ?? text.length;
      const content = text.slice(match.end, end);
      if (close === null) issues.push({ kind: 'unclosed', at: match.index, markup: match.text });
      if (token.block === 'verbatim') {
        // A fenced block of prose: it stays inside the surrounding prose, but its closer is paired.
        position = close?.end ?? text.length;
        continue;
      }
      flushProse(match.index);
      const nested = finder.find(token.markup.open, match.end);
      if (nested !== null && nested.index < end) {
        issues.push({ kind: 'nested-opener', at: nested.index, markup: nested.text });
      }
      if (token.block === 'code' && close !== null && content.trim() === '') {
        issues.push({ kind: 'empty-code', at: match.index, markup: match.text });
      }
      parts.push({
        kind: token.block,
        text: content,
        start: match.end,
        end,
        outerStart: match.index,
        outerEnd: close?.end ?? text.length,
        closed: close !== null,
      });
      position = close?.end ?? text.length;
      proseStart = position;
      if (close === null) break;
      resume = { offset: position, reasoning };
    } else if (token.role === 'reasoning-open' && reasoning === 'none') {
      flushProse(match.index);
      reasoning = 'open';
      proseStart = match.end;
      position = match.end;
      resume = { offset: position, reasoning };
    } else if (token.role === 'reasoning-close' && reasoning !== 'closed') {
      // Without an opener, the chat template opened the reasoning in the prompt.
      flushProse(match.index);
      reasoning = 'closed';
      proseStart = match.end;
      position = match.end;
      resume = { offset: position, reasoning };
    } else {
      issues.push({
        kind: token.role === 'reasoning-open' ? 'nested-opener' : 'stray-closer',
        at: match.index,
        markup: match.text,
      });
      position = match.end; // kept as prose text
    }
  }
  flushProse(text.length);

  classifyFinalProse(parts, reasoning === 'closed');
  return { parts, issues, answer: proseAnswer(parts), resume };
}

/**
 * A response's final answer: the last `\boxed{}` in its prose, never one inside a code block or
 * an interpreter output (a program that prints `\boxed{7}` has not answered 7). The agent loop
 * sets `trajectory.answer` with this, and `eval`, SFT, RL and the synthesis grade that answer.
 */
export function finalAnswer(response: string, markup: DialectMarkup): string | null {
  return parseResponse(response, markup).answer;
}

/** Without a closed reasoning wrapper, a final prose part holding a box is the answer. */
function classifyFinalProse(parts: ResponsePart[], reasoningClosed: boolean): void {
  const last = parts.at(-1);
  if (reasoningClosed || last === undefined || last.kind !== 'reasoning') return;
  if (extractBoxedAnswer(last.text) !== null) last.kind = 'answer';
}

function proseAnswer(parts: readonly ResponsePart[]): string | null {
  for (let index = parts.length - 1; index >= 0; index--) {
    const part = parts[index]!;
    if (part.kind !== 'reasoning' && part.kind !== 'answer') continue;
    const answer = extractBoxedAnswer(part.text);
    if (answer !== null) return answer;
  }
  return null;
}

/** Tokens recognised outside blocks, in tie-breaking order (openers first). */
function outsideTokens(markup: DialectMarkup): { token: Token; pattern: RegExp }[] {
  const tokens: { token: Token; pattern: RegExp }[] = [
    { token: { role: 'open', block: 'code', markup: markup.code }, pattern: markup.code.open },
    {
      token: { role: 'open', block: 'tool-output', markup: markup.toolOutput },
      pattern: markup.toolOutput.open,
    },
  ];
  if (markup.verbatim) {
    tokens.push({
      token: { role: 'open', block: 'verbatim', markup: markup.verbatim },
      pattern: markup.verbatim.open,
    });
  }
  if (markup.reasoning) {
    tokens.push({ token: { role: 'reasoning-open' }, pattern: markup.reasoning.open });
    tokens.push({ token: { role: 'reasoning-close' }, pattern: markup.reasoning.close });
  }
  tokens.push({ token: { role: 'stray-close' }, pattern: markup.code.close });
  if (markup.toolOutput.close.source !== markup.code.close.source) {
    tokens.push({ token: { role: 'stray-close' }, pattern: markup.toolOutput.close });
  }
  return tokens;
}

function earliest(
  finder: MatchFinder,
  tokens: readonly { token: Token; pattern: RegExp }[],
  from: number,
): { token: Token; match: Match } | null {
  let best: { token: Token; match: Match } | null = null;
  for (const { token, pattern } of tokens) {
    const match = finder.find(pattern, from);
    if (match !== null && (best === null || match.index < best.match.index)) best = { token, match };
  }
  return best;
}

/**
 * Finds the next match of a pattern at or after a position, remembering each pattern's last
 * answer so that a scan with monotonically increasing positions stays linear.
 */
class MatchFinder {
  readonly #text: string;
  readonly #cache = new Map<RegExp, { regex: RegExp; from: number; match: Match | null }>();

  constructor(text: string) {
    this.#text = text;
  }

  find(pattern: RegExp, from: number): Match | null {
    const cached = this.#cache.get(pattern);
    if (cached && cached.from <= from && (cached.match === null || cached.match.index >= from)) {
      return cached.match;
    }
    // A private copy: the dialect's shared regex objects keep no state between calls.
    const regex = cached?.regex ?? new RegExp(pattern.source, pattern.flags.replace('g', '') + 'g');
    regex.lastIndex = from;
    const found = regex.exec(this.#text);
    const match = found ? { index: found.index, end: found.index + found[0].length, text: found[0] } : null;
    this.#cache.set(pattern, { regex, from, match });
    return match;
  }
}
