/**
 * tokenizer.json split patterns are written for Oniguruma (the regex engine of the Rust
 * `tokenizers` library), whose shorthands are Unicode-aware where JavaScript's are not:
 * `\s` is the White_Space property (it has U+0085 NEL, JavaScript's `\s` has not; JavaScript's
 * has U+FEFF, Oniguruma's has not), `\d` is any decimal digit (Nd), `\w` is Unicode word
 * characters, and `.` excludes only `\n`. `compileHfRegex` rewrites these into JavaScript
 * Unicode classes (as the `tokenizers` library reads them, checked against version 0.23 in
 * `test/tokenizer-parity.test.ts`), and rewrites inline case-insensitive groups `(?i:...)` on
 * engines older than V8 12.5. Not covered: `\W` inside a bracket class (an error), nested
 * bracket classes, `\h`, `\G`, possessive quantifiers and atomic groups.
 */
import { TokenizerError } from './tokenizer-errors.ts';

/** Oniguruma's word characters in a bracket class (what `[\w]` matches). */
const WORD_IN_CLASS = '\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}';
/** Outside a class Oniguruma's `\w` also matches the Latin-1 digits ² ³ ¹ ¼ ½ ¾. */
const WORD = `[${WORD_IN_CLASS}\\u00B2\\u00B3\\u00B9\\u00BC-\\u00BE]`;
const NON_WORD = `[^${WORD_IN_CLASS}\\u00B2\\u00B3\\u00B9\\u00BC-\\u00BE]`;

const OUTSIDE_CLASS: Readonly<Record<string, string>> = {
  s: '\\p{White_Space}',
  S: '\\P{White_Space}',
  d: '\\p{Nd}',
  D: '\\P{Nd}',
  w: WORD,
  W: NON_WORD,
};

const INSIDE_CLASS: Readonly<Record<string, string>> = {
  s: '\\p{White_Space}',
  S: '\\P{White_Space}',
  d: '\\p{Nd}',
  D: '\\P{Nd}',
  w: WORD_IN_CLASS,
};

/** Compiles a tokenizer.json (Oniguruma) regex as a global Unicode JavaScript RegExp. */
export function compileHfRegex(source: string, where: string): RegExp {
  const translated = translateOnigurumaShorthands(source, where);
  try {
    return new RegExp(translated, 'gu');
  } catch (error) {
    try {
      return new RegExp(rewriteCaseInsensitiveGroups(translated), 'gu');
    } catch {
      throw new TokenizerError(
        'TOKENIZER_UNSUPPORTED',
        `${where}: regex ${JSON.stringify(source)} does not compile`,
        {
          cause: error,
        },
      );
    }
  }
}

/** `\s \S \d \D \w \W` and `.` rewritten with Oniguruma's meaning; everything else kept. */
export function translateOnigurumaShorthands(source: string, where: string): string {
  let out = '';
  let inClass = false;
  for (let index = 0; index < source.length; index++) {
    const char = source[index]!;
    if (char === '\\') {
      const next = source[index + 1] ?? '';
      const replacement = inClass ? INSIDE_CLASS[next] : OUTSIDE_CLASS[next];
      if (inClass && next === 'W') {
        throw new TokenizerError(
          'TOKENIZER_UNSUPPORTED',
          `${where}: regex ${JSON.stringify(source)}: \\W inside [...]`,
        );
      }
      out += replacement ?? `\\${next}`;
      index++;
      continue;
    }
    if (inClass) {
      if (char === ']') inClass = false;
      out += char;
      continue;
    }
    if (char === '[') {
      inClass = true;
      out += char;
      // A `]` right after `[` or `[^` is a literal in Oniguruma; keep it inside the class.
      const negated = source[index + 1] === '^';
      if (negated) out += source[++index];
      if (source[index + 1] === ']') out += `\\${source[++index]}`;
      continue;
    }
    out += char === '.' ? '[^\\n]' : char;
  }
  return out;
}

/** `(?i:...)` groups rewritten with `[xX]` classes for engines without inline modifiers. */
export function rewriteCaseInsensitiveGroups(source: string): string {
  let out = '';
  let index = 0;
  while (index < source.length) {
    const start = source.indexOf('(?i:', index);
    if (start < 0) break;
    out += `${source.slice(index, start)}(?:`;
    let depth = 1;
    let cursor = start + 4;
    while (cursor < source.length && depth > 0) {
      const char = source[cursor]!;
      if (char === '\\') {
        out += source.slice(cursor, cursor + 2);
        cursor += 2;
        continue;
      }
      if (char === '(') depth++;
      if (char === ')') depth--;
      out += /[a-zA-Z]/.test(char) && depth > 0 ? `[${char.toLowerCase()}${char.toUpperCase()}]` : char;
      cursor++;
    }
    index = cursor;
  }
  return out + source.slice(index);
}
