import { describe, expect, it } from 'vitest';
import { generateDifferentialCorpus } from './differential-corpus.ts';

const pairsFor = (answer: string) =>
  new Map(generateDifferentialCorpus([{ id: 'r', answer }]).map((pair) => [pair.kind, pair]));

describe('generateDifferentialCorpus', () => {
  it('rewrites an interval as its inequality and swaps a bracket for a near miss', () => {
    const pairs = pairsFor('(3,4]');
    expect(pairs.get('inequality')?.prediction).toBe('$\\boxed{3 < x \\le 4}$');
    expect(pairs.get('bracket-swap')).toMatchObject({
      prediction: '$\\boxed{[3,4]}$',
      intended: 'near-miss',
    });
    expect(pairs.has('list-words')).toBe(false);
  });

  it('treats a number with thousands separators as one number, not a list', () => {
    const pairs = pairsFor('58,500');
    for (const kind of ['several-boxes', 'list-reordered', 'missing-solution', 'boxes-quad-and']) {
      expect(pairs.has(kind)).toBe(false);
    }
  });

  it('lists: reordered and joined by words as equivalents, a missing or extra solution as near misses', () => {
    const pairs = pairsFor('1,-2');
    expect(pairs.get('list-reordered')?.prediction).toBe('$\\boxed{-2, 1}$');
    expect(pairs.get('list-words')?.prediction).toBe('$\\boxed{1 \\text{ or } -2}$');
    expect(pairs.get('labelled-list')?.reference).toBe('x_1 = 1, x_2 = -2');
    expect(pairs.get('missing-solution')).toMatchObject({
      prediction: '$\\boxed{1}$',
      intended: 'near-miss',
    });
    expect(pairs.get('extra-solution')?.prediction).toBe('$\\boxed{1,-2, 0}$');
  });

  it('changes a digit of the value, not of a numeral base, and labels with a letter the answer lacks', () => {
    expect(pairsFor('52_8').get('one-digit')?.prediction).toBe('So the answer is $\\boxed{53_8}$.');
    expect(pairsFor('x^2+1').get('one-digit')?.prediction).toBe('So the answer is $\\boxed{x^2+2}$.');
    expect(pairsFor('2k+2').get('labelled-reference')?.reference).toBe('N = 2k+2');
    expect(pairsFor('\\frac{3}{8}').get('decimal')?.prediction).toBe('The answer is $\\boxed{0.375}$.');
    expect(pairsFor('\\frac{1}{3}').has('decimal')).toBe(false);
  });

  it('is deterministic and gives every pair a unique id', () => {
    const references = [
      { id: 'a', answer: '\\left( 3, \\frac{\\pi}{2} \\right)' },
      { id: 'b', answer: '10,\\!080' },
    ];
    const first = generateDifferentialCorpus(references);
    expect(generateDifferentialCorpus(references)).toEqual(first);
    expect(new Set(first.map((pair) => pair.id)).size).toBe(first.length);
  });
});
