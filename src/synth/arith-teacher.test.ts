import { describe, expect, it } from 'vitest';
import { arithTrainProblems } from '../tasks/arith/arith-problems.ts';
import { type ArithNoise, arithNoiseOf, arithRewrite, arithTeacherReply } from './arith-teacher.ts';
import { repairFormat } from './format-repair.ts';

const problems = arithTrainProblems({ count: 200, seed: 3 });
const NONE: ArithNoise = { formatSlip: 0, failingCode: 0, madeUpOutput: 0, needlessCode: 0, wrongStep: 0 };

describe('arith teacher', () => {
  it('writes clean tool solutions without noise, boxed with the reference answer', () => {
    for (const problem of problems.slice(0, 40)) {
      const result = repairFormat(arithRewrite(problem, NONE));
      expect(result.status).toBe('ok');
      if (result.status === 'ok') expect(result.text).toContain(`\\boxed{${problem.answer}}`);
    }
  });

  it('draws each kind of noise at about its rate, deterministically per problem', () => {
    const noise: ArithNoise = {
      formatSlip: 0.2,
      failingCode: 0.2,
      madeUpOutput: 0.2,
      needlessCode: 0.2,
      wrongStep: 0.1,
    };
    const counts = new Map<string | null, number>();
    for (const problem of problems)
      counts.set(arithNoiseOf(problem, noise), (counts.get(arithNoiseOf(problem, noise)) ?? 0) + 1);
    for (const kind of ['formatSlip', 'failingCode', 'madeUpOutput', 'needlessCode']) {
      expect(counts.get(kind)).toBeGreaterThan(20);
      expect(counts.get(kind)).toBeLessThan(60);
    }
    expect(arithRewrite(problems[0]!, noise)).toBe(arithRewrite(problems[0]!, noise));
  });

  it('each noise kind shows in the text as described', () => {
    const only = (kind: keyof ArithNoise): ArithNoise => ({ ...NONE, [kind]: 1 });
    const problem = problems[0]!;
    expect(arithRewrite(problem, only('failingCode'))).toContain('pritn(');
    expect(arithRewrite(problem, only('needlessCode'))).toContain('print(2 + 3)');
    expect(arithRewrite(problem, only('madeUpOutput'))).not.toContain(`\\boxed{${problem.answer}}`);
    expect(arithRewrite(problem, only('wrongStep'))).not.toContain(`\\boxed{${problem.answer}}`);
    expect(arithRewrite(problem, only('formatSlip'))).toMatch(/```python|<\/code> <code>/);
  });

  it('answers judge, self-correction and unknown prompts', () => {
    const byId = new Map(problems.map((problem) => [problem.id, problem]));
    expect(arithTeacherReply('Reply with one word: HOLDS or BROKEN.', byId, NONE)).toBe('HOLDS');
    const fix = arithTeacherReply(`and a block failed.\n${problems[1]!.problem}`, byId, NONE);
    expect(fix).toContain(`\\boxed{${problems[1]!.answer}}`);
    expect(arithTeacherReply('What is the meaning of life?', byId, NONE)).toBeNull();
  });
});
