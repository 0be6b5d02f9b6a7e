import { describe, expect, it } from 'vitest';
import { createPreTokenizer } from './pre-tokenizer.ts';
import { compileHfRegex, rewriteCaseInsensitiveGroups } from './pre-tokenizer-regex.ts';

describe('pre-tokenizer', () => {
  it('rewrites inline case-insensitive groups for older regex engines', () => {
    const rewritten = rewriteCaseInsensitiveGroups("(?i:'s|'ll)|\\p{L}+");
    expect(rewritten).toBe("(?:'[sS]|'[lL][lL])|\\p{L}+");
    expect("IT'S WE'LL".match(new RegExp(rewritten, 'gu'))).toEqual(['IT', "'S", 'WE', "'LL"]);
  });

  it('splits with the GPT-2 pattern and prefix space when ByteLevel asks', () => {
    const split = createPreTokenizer({ type: 'ByteLevel', add_prefix_space: true, use_regex: true }, 'test');
    expect(split("hi there, it's 42")).toEqual(['Ġhi', 'Ġthere', ',', 'Ġit', "'s", 'Ġ42']);
  });

  it('supports Split behaviors Removed and MergedWithPrevious', () => {
    const removed = createPreTokenizer(
      { type: 'Split', pattern: { String: '-' }, behavior: 'Removed' },
      'test',
    );
    expect(removed('a-b')).toEqual(['a', 'b']);
    const merged = createPreTokenizer(
      { type: 'Split', pattern: { String: '-' }, behavior: 'MergedWithPrevious' },
      't',
    );
    expect(merged('a-b-')).toEqual(['a-', 'b-']);
  });
});

describe('Oniguruma shorthands in split patterns', () => {
  /** Matches and gaps in order, as Split(Regex(pattern), 'isolated') cuts the text. */
  const pieces = (pattern: string, text: string) => {
    const out: string[] = [];
    let last = 0;
    for (const match of text.matchAll(compileHfRegex(pattern, 'test'))) {
      if (match.index > last) out.push(text.slice(last, match.index));
      out.push(match[0]);
      last = match.index + match[0].length;
    }
    if (last < text.length) out.push(text.slice(last));
    return out;
  };

  // Expected pieces: what the Rust `tokenizers` library 0.23.3 gives for the same pattern and text.
  it('reads \\s and \\S as White_Space: U+0085 is whitespace, U+FEFF is not', () => {
    expect(pieces('\\s+', 'a\u0085\ufeff\u00a0\u3000\u200bb')).toEqual([
      'a',
      '\u0085',
      '\ufeff',
      '\u00a0\u3000',
      '\u200bb',
    ]);
    expect(pieces('\\S+', 'a\u0085b\ufeffc')).toEqual(['a', '\u0085', 'b\ufeffc']);
    expect(pieces('[^\\s]+', 'a\u0085b\ufeffc')).toEqual(['a', '\u0085', 'b\ufeffc']);
  });

  it('reads \\d as any decimal digit, in and out of brackets', () => {
    expect(pieces('\\d+', '12\u0661\u0662\u0663\u096a\u096bx')).toEqual([
      '12\u0661\u0662\u0663\u096a\u096b',
      'x',
    ]);
    expect(pieces('[^\\s\\d]+', 'ab\u0085cd\u0661e\ufeff')).toEqual([
      'ab',
      '\u0085',
      'cd',
      '\u0661',
      'e\ufeff',
    ]);
  });

  it('reads \\w as Unicode word characters (with the Latin-1 digits only outside brackets)', () => {
    expect(pieces('\\w+', 'a\u200c\u200db\u00b2\u00bd\u00b5c\u2160\u0660\u00aa_\u203f-\u0301z')).toEqual([
      'a',
      '\u200c\u200d',
      'b\u00b2\u00bd\u00b5c\u2160\u0660\u00aa_\u203f',
      '-',
      '\u0301z',
    ]);
    expect(pieces('[\\w]+', 'ab\u00b2 c')).toEqual(['ab', '\u00b2 ', 'c']);
    expect(pieces('\\W+', 'a!\u00b2?b')).toEqual(['a', '!', '\u00b2', '?', 'b']);
  });

  it('reads . as anything but \\n', () => {
    expect(pieces('.+', 'a\nb\rc\u2028d')).toEqual(['a', '\n', 'b\rc\u2028d']);
  });

  it('splits Qwen3 text around U+0085 and U+FEFF as the library does', () => {
    const qwen =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    expect(pieces(qwen, 'a \ufeffb')).toEqual(['a', ' \ufeff', 'b']);
    expect(pieces(qwen, '\u0085\u0085c')).toEqual(['\u0085', '\u0085c']);
    expect(pieces(qwen, '!\u0085')).toEqual(['!', '\u0085']);
  });
});
