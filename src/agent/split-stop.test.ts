import { describe, expect, it } from 'vitest';
import type { Tokenizer } from '../engine/tokenizer.ts';
import type { GenerateResult } from '../engine/types.ts';
import { joinSplitStop } from './split-stop.ts';

/** Two-character tokens: id = index into the vocabulary list. */
function pairTokenizer(vocabulary: string[]): Tokenizer {
  return {
    name: 'pairs',
    eosTokenId: null,
    encode: () => {
      throw new Error('not used');
    },
    decode: (ids) => ids.map((id) => vocabulary[id] ?? '').join(''),
    applyChatTemplate: () => '',
  };
}

const result = (text: string, tokenIds: number[] | null): GenerateResult => ({
  tokenIds,
  text,
  logprobs: tokenIds === null ? null : tokenIds.map((id) => -id),
  finishReason: 'length',
  matchedStop: null,
  policyVersion: null,
});

describe('joinSplitStop', () => {
  const vocabulary = ['de', '>\n', 'xx', 'e>'];
  const tokenizer = pairTokenizer(vocabulary);

  it('cuts the tokens where a stop begun in the previous call completes', () => {
    const joined = joinSplitStop('print(1)\n</co', result('de>\nxx', [0, 1, 2]), ['</code>'], tokenizer);
    expect(joined).toMatchObject({
      tokenIds: [0, 1],
      logprobs: [-0, -1],
      text: 'de>\n',
      finishReason: 'stop',
      matchedStop: '</code>',
    });
  });

  it('cuts text-only results by characters', () => {
    const joined = joinSplitStop('x</cod', result('e>\nmore', null), ['</code>'], null);
    expect(joined).toMatchObject({ text: 'e>', tokenIds: null, matchedStop: '</code>' });
  });

  it('leaves results alone when nothing straddles the boundary', () => {
    expect(joinSplitStop('x</co', result('xx', [2]), ['</code>'], tokenizer)).toBeNull();
    expect(joinSplitStop('plain', result('de>', [0, 1]), ['</code>'], tokenizer)).toBeNull();
  });
});
