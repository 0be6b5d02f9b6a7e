import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { jailPython } from '../../shared/python-environments.ts';
import { arithEvalProblems, arithTrainProblems } from './arith-problems.ts';
import { arithToolPlan } from './arith-tool-plan.ts';

describe('arith tool plans', () => {
  it('code is at most three short lines', () => {
    for (const problem of arithTrainProblems({ seed: 4, count: 64 })) {
      const { code, lead } = arithToolPlan(problem.spec);
      expect(code.split('\n').length).toBeLessThanOrEqual(3);
      expect(code).toMatch(/print\(/);
      expect(lead.length).toBeLessThan(80);
    }
  });

  it('each program prints exactly the reference answer (plain Python, every kind and level)', () => {
    const problems = [...arithTrainProblems({ seed: 11, count: 64 }), ...arithEvalProblems({ count: 32 })];
    // Each program runs in a fresh namespace; outputs are separated by a marker line.
    const script = [
      'import io, contextlib, json, sys',
      `programs = json.loads(sys.stdin.read())`,
      'for code in programs:',
      '    buffer = io.StringIO()',
      '    with contextlib.redirect_stdout(buffer):',
      '        exec(code, {})',
      '    print(json.dumps(buffer.getvalue()))',
    ].join('\n');
    const input = JSON.stringify(problems.map((problem) => arithToolPlan(problem.spec).code));
    const lines = execFileSync(jailPython(), ['-c', script], {
      input,
      encoding: 'utf8',
      timeout: 60_000,
    })
      .trim()
      .split('\n');
    problems.forEach((problem, index) => {
      expect(JSON.parse(lines[index]!), problem.problem).toBe(`${problem.answer}\n`);
    });
  });

  it('the conclusion quotes no number (the boxed answer is the only copy of the output)', () => {
    for (const problem of arithTrainProblems({ seed: 1, count: 200 })) {
      expect(arithToolPlan(problem.spec).conclusion, problem.problem).not.toMatch(/[0-9]/);
    }
  });
});
