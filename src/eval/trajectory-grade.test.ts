import { describe, expect, it } from 'vitest';
import { fixtureTrajectory } from '../../test/eval-fixtures.ts';
import type { Grader } from '../grader/types.ts';
import { attachGrade, gradeTrajectory, readGrade } from './trajectory-grade.ts';

describe('trajectory grades', () => {
  it('grades the final answer, and calls a missing one no-answer without the grader', async () => {
    const seen: string[] = [];
    const grader: Grader = async (prediction, reference) => {
      seen.push(prediction);
      return { correct: prediction === reference, extracted: prediction, reason: 'exact' };
    };
    const answered = fixtureTrajectory({ problemId: 'p', sample: 0, answer: '\\frac{1}{2}' });
    expect(await gradeTrajectory(answered, '\\frac{1}{2}', grader)).toEqual({
      correct: true,
      extracted: '\\frac{1}{2}',
      reason: 'exact',
    });
    const unanswered = fixtureTrajectory({ problemId: 'p', sample: 1, answer: null });
    expect(await gradeTrajectory(unanswered, '1', grader)).toEqual({
      correct: false,
      extracted: null,
      reason: 'no-answer',
    });
    expect(seen).toEqual(['\\frac{1}{2}']);
  });

  it('stores the grade in meta beside existing keys and reads it back', () => {
    const trajectory = {
      ...fixtureTrajectory({ problemId: 'p', sample: 0, answer: '3' }),
      meta: { engine: 'x' },
    };
    const graded = attachGrade(trajectory, { correct: false, extracted: '3', reason: 'mismatch' }, '4');
    expect(graded.meta).toEqual({
      engine: 'x',
      reference: '4',
      correct: false,
      reason: 'mismatch',
      extracted: '3',
    });
    expect(readGrade(graded)).toEqual({ reference: '4', correct: false, reason: 'mismatch', extracted: '3' });
    expect(readGrade(trajectory)).toBe(null);
  });
});
