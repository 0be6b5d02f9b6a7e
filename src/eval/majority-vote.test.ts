import { describe, expect, it } from 'vitest';
import { majorityVote } from './majority-vote.ts';

// Test equivalence: numbers compare by value, anything else by text.
const byValue = (left: string, right: string) => {
  const a = Number(parseNumber(left));
  const b = Number(parseNumber(right));
  return Number.isFinite(a) && Number.isFinite(b) ? Math.abs(a - b) < 1e-9 : left === right;
};
function parseNumber(text: string): number {
  const fraction = /^(-?\d+)\/(\d+)$/.exec(text);
  return fraction ? Number(fraction[1]) / Number(fraction[2]) : Number(text);
}

describe('majorityVote', () => {
  it('groups equivalent answers and picks the largest group', async () => {
    const vote = await majorityVote(
      [
        { sample: 0, answer: '0.5', correct: true },
        { sample: 1, answer: '3', correct: false },
        { sample: 2, answer: '1/2', correct: true },
        { sample: 3, answer: '3', correct: false },
        { sample: 4, answer: '0.50', correct: true },
      ],
      byValue,
    );
    expect(vote).toEqual({ answer: '0.5', votes: 3, correct: true, groups: 2 });
  });

  it('breaks ties by earliest first appearance, whatever the input order', async () => {
    const candidates = [
      { sample: 3, answer: '7', correct: true },
      { sample: 1, answer: '9', correct: false },
      { sample: 2, answer: '7', correct: true },
      { sample: 0, answer: '9', correct: false },
    ];
    const vote = await majorityVote(candidates, byValue);
    expect(vote.answer).toBe('9');
    expect(vote.correct).toBe(false);
    expect((await majorityVote([...candidates].reverse(), byValue)).answer).toBe('9');
  });

  it('ignores samples without an answer and handles none at all', async () => {
    const vote = await majorityVote(
      [
        { sample: 0, answer: null, correct: false },
        { sample: 1, answer: null, correct: false },
        { sample: 2, answer: '4', correct: true },
      ],
      byValue,
    );
    expect(vote).toEqual({ answer: '4', votes: 1, correct: true, groups: 1 });
    expect(await majorityVote([{ sample: 0, answer: null, correct: false }], byValue)).toEqual({
      answer: null,
      votes: 0,
      correct: false,
      groups: 0,
    });
  });

  it('awaits an asynchronous equivalence', async () => {
    const vote = await majorityVote(
      [
        { sample: 0, answer: 'a', correct: false },
        { sample: 1, answer: 'b', correct: true },
        { sample: 2, answer: 'B', correct: true },
      ],
      async (left, right) => left.toLowerCase() === right.toLowerCase(),
    );
    expect(vote).toEqual({ answer: 'b', votes: 2, correct: true, groups: 2 });
  });
});
