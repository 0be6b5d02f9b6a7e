import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { jailPython } from '../../shared/python-environments.ts';
import { ARITH_SPACED_LEVEL } from './arith-generator.ts';
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

/** Runs each program in a fresh namespace; returns its output, or the name of the exception it raised. */
function runPrograms(programs: string[]): string[] {
  const script = [
    'import io, contextlib, json, sys',
    'for code in json.loads(sys.stdin.read()):',
    '    buffer = io.StringIO()',
    '    try:',
    '        with contextlib.redirect_stdout(buffer):',
    '            exec(compile(code, "<cell>", "exec"), {})',
    '        print(json.dumps(buffer.getvalue()))',
    '    except BaseException as error:',
    '        print(json.dumps(type(error).__name__))',
  ].join('\n');
  return execFileSync(jailPython(), ['-c', script], {
    input: JSON.stringify(programs),
    encoding: 'utf8',
    timeout: 60_000,
  })
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as string);
}

describe('arith tool plans at the spaced level', () => {
  const problems = [
    ...arithTrainProblems({ seed: 12, count: 48, levels: [ARITH_SPACED_LEVEL] }),
    ...arithEvalProblems({ count: 16, levels: [ARITH_SPACED_LEVEL] }),
  ];

  it('the literal copy of the numbers is a SyntaxError in Python; the program with _ prints the answer', () => {
    const plans = problems.map((problem) => arithToolPlan(problem.spec));
    const first = runPrograms(plans.map((plan) => plan.firstAttempt!.code));
    const fixed = runPrograms(plans.map((plan) => plan.code));
    problems.forEach((problem, index) => {
      expect(first[index], plans[index]!.firstAttempt!.code).toBe('SyntaxError');
      expect(fixed[index], plans[index]!.code).toBe(`${problem.answer}\n`);
    });
  });

  it('the two programs differ only in the separator between digit groups', () => {
    for (const problem of problems) {
      const plan = arithToolPlan(problem.spec);
      expect(plan.firstAttempt!.code).toMatch(/\d \d{3}/);
      expect(plan.code).toMatch(/\d_\d{3}/);
      expect(plan.firstAttempt!.code.replace(/(?<=\d) (?=\d)/g, '_')).toBe(plan.code);
      expect(plan.directLead!.startsWith(plan.lead)).toBe(true);
      expect(`${plan.firstAttempt!.fix} ${plan.directLead}`).not.toMatch(/[0-9]/);
    }
  });

  it('levels 1..4 have neither a first attempt nor a second lead', () => {
    for (const problem of arithTrainProblems({ seed: 4, count: 64 })) {
      const plan = arithToolPlan(problem.spec);
      expect(plan.firstAttempt).toBeUndefined();
      expect(plan.directLead).toBeUndefined();
    }
  });
});
