import { describe, expect, it } from 'vitest';
import { BpeModel } from './bpe-model.ts';

const vocab = new Map(Object.entries({ a: 0, b: 1, c: 2, ab: 3, aa: 4, abc: 5, '<unk>': 6 }));

describe('BpeModel', () => {
  it('merges the lowest-ranked pair first, every occurrence left to right', () => {
    const model = new BpeModel({
      vocab,
      merges: [
        ['a', 'b'],
        ['a', 'a'],
        ['ab', 'c'],
      ],
      where: 'test',
    });
    expect(model.encodeWord('abc')).toEqual([5]);
    expect(model.encodeWord('aaa')).toEqual([4, 0]);
    expect(model.encodeWord('aab')).toEqual([0, 3]);
    expect(model.encodeWord('cab')).toEqual([2, 3]);
  });

  it('gives a character outside the vocabulary the unknown id, or drops it without one (as tokenizers does)', () => {
    const withUnknown = new BpeModel({ vocab, merges: [['a', 'b']], unknownTokenId: 6, where: 'test' });
    expect(withUnknown.encodeWord('axb')).toEqual([0, 6, 1]);
    const without = new BpeModel({ vocab, merges: [['a', 'b']], where: 'test' });
    expect(without.encodeWord('axb')).toEqual([3]);
    expect(without.encodeWord('xab')).toEqual([3]);
  });

  it('rejects a merge whose parts or result are not in the vocabulary, as the tokenizers library does', () => {
    expect(() => new BpeModel({ vocab, merges: [['b', 'c']], where: 'test' })).toThrow(
      expect.objectContaining({
        code: 'TOKENIZER_INVALID',
        message: expect.stringContaining('model.merges.0: "bc"'),
      }),
    );
    expect(() => new BpeModel({ vocab, merges: [['x', 'a']], where: 'test' })).toThrow(
      /"x" is not in model.vocab/,
    );
  });
});
