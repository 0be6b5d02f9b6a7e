import { describe, expect, it } from 'vitest';
import { HfTokenizer } from './hf-tokenizer.ts';

/** A two-letter BPE tokenizer.json with one merge. */
function tinyTokenizerJson(): { model: { type: 'BPE'; vocab: Record<string, unknown>; merges: unknown[] } } {
  return { model: { type: 'BPE', vocab: { a: 0, b: 1, ab: 2 }, merges: ['a b'] } };
}

describe('HfTokenizer reading tokenizer.json', () => {
  it('encodes with the merges of a valid file', () => {
    const tokenizer = new HfTokenizer({ tokenizerJson: tinyTokenizerJson(), tokenizerConfig: {} });
    expect(tokenizer.encode('abba')).toEqual([2, 1, 0]);
  });

  it('names a vocabulary entry whose id is not a non-negative integer', () => {
    for (const bad of [-1, 1.5, '3', null]) {
      const json = tinyTokenizerJson();
      json.model.vocab.b = bad;
      expect(() => new HfTokenizer({ tokenizerJson: json, tokenizerConfig: {}, where: 'x' })).toThrow(
        expect.objectContaining({
          code: 'TOKENIZER_INVALID',
          message: expect.stringContaining('x/tokenizer.json: field model.vocab.b'),
        }),
      );
    }
  });

  it('names merges that are neither "a b" strings nor pairs', () => {
    const json = tinyTokenizerJson();
    json.model.merges = ['a b', ['a']];
    expect(() => new HfTokenizer({ tokenizerJson: json, tokenizerConfig: {}, where: 'x' })).toThrow(
      /x\/tokenizer\.json: field model\.merges/,
    );
  });
});
