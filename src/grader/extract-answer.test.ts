import { describe, expect, it } from 'vitest';
import { extractAnswer } from './extract-answer.ts';

describe('extractAnswer', () => {
  it('takes the last closed box, brace-matched', () => {
    expect(extractAnswer('a \\boxed{1} b \\boxed{\\frac{1}{2}} c')).toEqual({
      answer: '\\frac{1}{2}',
      source: 'boxed',
    });
    expect(extractAnswer('\\boxed{3} then \\boxed{4')?.answer).toBe('3');
    expect(extractAnswer('\\fbox{x+1}')?.answer).toBe('x+1');
    expect(extractAnswer('so \\boxed 7.')?.answer).toBe('7.');
  });

  it('falls back to answer phrases, then to a short bare answer', () => {
    expect(extractAnswer('Work...\nThe final answer is $\\frac{3}{4}$.')).toEqual({
      answer: '\\frac{3}{4}',
      source: 'phrase',
    });
    expect(extractAnswer('Answer: 12')).toEqual({ answer: '12', source: 'phrase' });
    expect(extractAnswer('  025 ')).toEqual({ answer: '025', source: 'bare' });
    expect(extractAnswer('line one\nline two without any answer')).toBeNull();
  });

  it('stays linear on a megabyte of unclosed boxes', () => {
    const hostile = '\\boxed{'.repeat(150_000);
    expect(extractAnswer(hostile)).toBeNull();
    expect(extractAnswer(`${hostile}\\boxed{5}`)?.answer).toBe('5');
  });
});
