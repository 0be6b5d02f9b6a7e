import { describe, expect, it } from 'vitest';
import { createPreTokenizer, rewriteCaseInsensitiveGroups } from './pre-tokenizer.ts';

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
