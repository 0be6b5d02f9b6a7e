import { describe, expect, it } from 'vitest';
import { getDialect } from '../protocol/index.ts';
import { solutionDialectIssue } from './solution-dialect.ts';
import type { TaskSolution } from './types.ts';

const problem = { id: 'p1', family: 'arith', level: 1, problem: 'Compute 2 * 3.', answer: '6' };
const solution = (segments: TaskSolution['segments']): TaskSolution => ({ problem, style: 'tool', segments });
const tagsSolution = solution([
  { kind: 'model', text: '<think>Multiply. <code>\nprint(2 * 3)\n</code>' },
  { kind: 'tool', text: '\n<interpreter>\n6\n</interpreter>\n' },
  { kind: 'model', text: 'Done.</think>\nThe answer is \\boxed{6}.' },
]);
const markdownSolution = solution([
  { kind: 'model', text: 'Multiply.\n```python\nprint(2 * 3)\n```\n' },
  { kind: 'tool', text: '```output\n6\n```\n' },
  { kind: 'model', text: 'The answer is \\boxed{6}.' },
]);

describe('solutionDialectIssue', () => {
  it('accepts a solution in its own dialect, and text solutions in any', () => {
    expect(solutionDialectIssue(tagsSolution, getDialect('tags'))).toBeNull();
    expect(solutionDialectIssue(markdownSolution, getDialect('markdown'))).toBeNull();
    const text = solution([{ kind: 'model', text: '2 * 3 = 6. \\boxed{6}' }]);
    expect(solutionDialectIssue(text, getDialect('markdown'))).toBeNull();
  });

  it('names the tool segment whose code block the dialect does not close', () => {
    expect(solutionDialectIssue(tagsSolution, getDialect('markdown'))).toBe(
      'segment 1: the model text before this interpreter output does not end with a markdown code block',
    );
    expect(solutionDialectIssue(markdownSolution, getDialect('tags'))).toContain('segment 1');
  });

  it('accepts a code block whose stop string the engine trimmed', () => {
    const trimmed = solution([
      { kind: 'model', text: '<think>Multiply. <code>\nprint(2 * 3)\n' },
      { kind: 'tool', text: '</code>\n<interpreter>\n6\n</interpreter>\n' },
    ]);
    expect(solutionDialectIssue(trimmed, getDialect('tags'))).toBeNull();
  });
});
