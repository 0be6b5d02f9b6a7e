import { describe, expect, it } from 'vitest';
import { BlockKeyCache } from './block-key-cache.ts';
import { blockKeys } from './prefix-cache.ts';

describe('BlockKeyCache', () => {
  it('gives the same keys as hashing the whole prompt, as a prompt grows, changes and restarts', () => {
    const cache = new BlockKeyCache({ blockTokens: 4 });
    const prompt = Array.from({ length: 50 }, (_, index) => index % 7);
    const first = cache.keysFor(prompt, 's');
    expect(first).toEqual(blockKeys(prompt, 4));
    const grown = [...prompt, 9, 9, 9, 9, 9, 9, 9];
    expect(cache.keysFor(grown, 's')).toEqual(blockKeys(grown, 4));
    const changed = [...grown];
    changed[21] = 100;
    expect(cache.keysFor(changed, 's')).toEqual(blockKeys(changed, 4));
    expect(cache.keysFor(prompt.slice(0, 10), 's')).toEqual(blockKeys(prompt.slice(0, 10), 4));
    // The array handed out earlier is not changed by later calls.
    expect(first).toEqual(blockKeys(prompt, 4));
  });
});
