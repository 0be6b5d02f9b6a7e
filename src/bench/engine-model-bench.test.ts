import { describe, expect, it } from 'vitest';
import { benchPrompts } from './engine-model-bench.ts';

describe('benchPrompts', () => {
  it('gives distinct prompts of one length, every id inside the vocabulary', () => {
    for (const vocabulary of [605, 49_152]) {
      const prompts = benchPrompts(32, 64, vocabulary);
      expect(prompts).toHaveLength(32);
      expect(new Set(prompts.map((prompt) => prompt.length))).toEqual(new Set([64]));
      expect(new Set(prompts.map((prompt) => prompt.join(','))).size).toBe(32);
      expect(Math.max(...prompts.flat())).toBeLessThan(vocabulary);
      expect(Math.min(...prompts.flat())).toBeGreaterThanOrEqual(0);
    }
  });
});
