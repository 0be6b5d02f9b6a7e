/**
 * Matching added tokens (`added_tokens` of tokenizer.json) in text, as the `tokenizers`
 * library does: leftmost-longest over all contents; `lstrip`/`rstrip` absorb the whitespace
 * before/after the token (White_Space, Rust's `char::is_whitespace`: U+0085 is in it, U+FEFF
 * is not, the other way round from JavaScript's `\s` and `trim`); a `single_word` token matches
 * only where neither neighbour of its content is a word character (alphanumeric or `_`). The
 * tokenizer runs one matcher on the raw text (tokens with `normalized: false`) and one on the
 * normalized text between those matches (tokens with `normalized: true`, their contents
 * normalized the same way). Not covered: when a `single_word` match is refused, the library does
 * not try a shorter token at that place and this matcher does.
 */
import type { z } from 'zod';
import type { addedTokenSchema } from './hf-tokenizer-files.ts';
import { TokenizerError } from './tokenizer-errors.ts';

export type AddedToken = z.infer<typeof addedTokenSchema>;

const WHITESPACE_RUN = '\\p{White_Space}*';
const LEADING_WHITESPACE = /^\p{White_Space}+/u;
const TRAILING_WHITESPACE = /\p{White_Space}+$/u;
const WORD_CHARACTER = '[\\p{Alphabetic}\\p{N}_]';

export class AddedTokenMatcher {
  readonly #pattern: RegExp;
  readonly #idByContent = new Map<string, number>();

  /** A matcher for `tokens` (contents passed through `content`), or null for no tokens. */
  static create(
    tokens: readonly AddedToken[],
    content: (token: AddedToken) => string = (token) => token.content,
  ): AddedTokenMatcher | null {
    return tokens.length === 0 ? null : new AddedTokenMatcher(tokens, content);
  }

  private constructor(tokens: readonly AddedToken[], content: (token: AddedToken) => string) {
    const entries = tokens.map((token) => ({ token, text: content(token) }));
    for (const { token, text } of entries) this.#idByContent.set(text, token.id);
    // Longest first: the alternation then finds the longest token at the leftmost place.
    entries.sort((left, right) => right.text.length - left.text.length);
    const alternatives = entries.map(({ token, text }) => {
      const escaped = text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const word = token.single_word ? `(?<!${WORD_CHARACTER})${escaped}(?!${WORD_CHARACTER})` : escaped;
      return `${token.lstrip ? WHITESPACE_RUN : ''}${word}${token.rstrip ? WHITESPACE_RUN : ''}`;
    });
    this.#pattern = new RegExp(alternatives.join('|'), 'gu');
  }

  /** Walks `text`: `onText` for each stretch between tokens (maybe empty), `onToken` for each token id. */
  split(text: string, onText: (segment: string) => void, onToken: (id: number) => void): void {
    let last = 0;
    for (const match of text.matchAll(this.#pattern)) {
      onText(text.slice(last, match.index));
      onToken(this.#idOf(match[0]));
      last = match.index + match[0].length;
    }
    onText(text.slice(last));
  }

  /** The id of a match, whose text may carry whitespace absorbed by lstrip/rstrip. */
  #idOf(matched: string): number {
    const withoutLeft = matched.replace(LEADING_WHITESPACE, '');
    for (const candidate of [
      matched,
      withoutLeft,
      matched.replace(TRAILING_WHITESPACE, ''),
      withoutLeft.replace(TRAILING_WHITESPACE, ''),
    ]) {
      const id = this.#idByContent.get(candidate);
      if (id !== undefined) return id;
    }
    // Unreachable: every match is one of the contents, with whitespace around it.
    throw new TokenizerError(
      'TOKENIZER_UNKNOWN_TOKEN',
      `added token match ${JSON.stringify(matched)} has no id`,
    );
  }
}
