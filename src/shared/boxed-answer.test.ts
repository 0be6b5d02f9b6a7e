import { describe, expect, it } from 'vitest';
import { extractBoxedAnswer, lastBox } from './boxed-answer.ts';

describe('extractBoxedAnswer', () => {
  it.each([
    ['The answer is \\boxed{42}.', '42'],
    ['\\boxed{\\frac{1}{2}}', '\\frac{1}{2}'],
    ['first \\boxed{1} then \\boxed{2}', '2'],
    ['\\fbox{7}', '7'],
    ['\\boxed{\\{1, 2\\}}', '\\{1, 2\\}'],
    ['\\boxed{a_{n+1}^{2}} and \\boxed {x}', 'x'],
    ['\\boxed 5 is it', '5'],
    ['closed \\boxed{3} then unclosed \\boxed{4', '3'],
    ['no box here', null],
    ['\\boxedx{1}', null],
    ['$\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}$', '\\left( 3, \\frac{\\pi}{2} \\right)'],
  ])('%s → %s', (text, expected) => {
    expect(extractBoxedAnswer(text)).toBe(expected);
  });

  it('says where the last closed box starts, its content untrimmed', () => {
    expect(lastBox('\\boxed{1} x \\fbox{ {2} } \\boxed{3')).toEqual({ content: ' {2} ', start: 12 });
    expect(lastBox('\\boxed{')).toBeNull();
  });

  it('stays linear on thousands of nested braces', () => {
    const deep = `\\boxed{${'{'.repeat(5000)}x${'}'.repeat(5000)}}`;
    expect(extractBoxedAnswer(deep)?.length).toBe(10_001);
  });
});
