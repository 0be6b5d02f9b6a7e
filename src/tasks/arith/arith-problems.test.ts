import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { jailPython } from '../../shared/python-environments.ts';
import { createSeededRandom } from '../seeded-random.ts';
import { ARITH_LEVELS, ARITH_SPACED_LEVEL, generateArithSpec } from './arith-generator.ts';
import {
  ArithSpaceExhaustedError,
  arithBenchmark,
  arithEvalProblems,
  arithTrainProblems,
} from './arith-problems.ts';
import { ARITH_KINDS, type ArithKind, type ArithSpec, arithStatement, statedNumbers } from './arith-spec.ts';
import { arithProblemId, arithSplitOf } from './arith-split.ts';

/** One Python line printing the answer of `spec`, computed by Python's own integers and SymPy. */
function pythonLine(spec: ArithSpec): string {
  switch (spec.kind) {
    case 'product':
      return `print(${spec.a} * ${spec.b})`;
    case 'sum':
      return `print(sum([${spec.terms.join(', ')}]))`;
    case 'mod-power':
      return `print(pow(${spec.base}, ${spec.exponent}, ${spec.modulus}))`;
    case 'power-digit-sum':
      return `print(sum(int(d) for d in str(${spec.base} ** ${spec.exponent})))`;
    case 'gcd':
      return `print(math.gcd(${spec.a}, ${spec.b}))`;
    case 'lcm':
      return `print(math.lcm(${spec.a}, ${spec.b}))`;
    case 'linear-equation':
      return `x = sympy.Symbol('x'); print(sympy.solve(${spec.a}*x + (${spec.b}) - (${spec.c}), x)[0])`;
    case 'linear-system':
      return (
        `x, y = sympy.symbols('x y'); ` +
        `print(sympy.solve([${spec.a1}*x + (${spec.b1})*y - (${spec.c1}), ${spec.a2}*x + (${spec.b2})*y - (${spec.c2})], [x, y])[x])`
      );
  }
}

/** The reference answer of each spec recomputed by Python. */
function pythonAnswers(specs: ArithSpec[]): string[] {
  const script = ['import math, sympy', ...specs.map(pythonLine)].join('\n');
  return execFileSync(jailPython(), ['-c', script], { encoding: 'utf8', timeout: 60_000 }).trim().split('\n');
}

/** The size of the largest operand in digits: the measure that levels grow. */
function operandDigits(spec: ArithSpec): number {
  const values = Object.values(spec).filter((value): value is bigint => typeof value === 'bigint');
  const terms = spec.kind === 'sum' ? spec.terms : [];
  return Math.max(...[...values, ...terms].map((value) => (value < 0n ? -value : value).toString().length));
}

describe('arith problem sets', () => {
  it('are deterministic from the seed, and a longer set extends a shorter one', () => {
    const first = arithTrainProblems({ seed: 42, count: 60 });
    expect(arithTrainProblems({ seed: 42, count: 60 })).toEqual(first);
    expect(arithTrainProblems({ seed: 42, count: 30 })).toEqual(first.slice(0, 30));
    const other = arithTrainProblems({ seed: 43, count: 60 });
    expect(other.map((problem) => problem.id)).not.toEqual(first.map((problem) => problem.id));
    expect(arithEvalProblems({ count: 20 })).toEqual(arithEvalProblems({ count: 20 }));
  });

  it('cover every kind and level evenly, with unique ids', () => {
    const problems = arithTrainProblems({ seed: 1, count: ARITH_KINDS.length * ARITH_LEVELS.length * 3 });
    const counts = new Map<string, number>();
    for (const problem of problems) {
      const key = `${problem.spec.kind}/${problem.level}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    expect(counts.size).toBe(ARITH_KINDS.length * ARITH_LEVELS.length);
    expect([...counts.values()].every((count) => count === 3)).toBe(true);
    expect(new Set(problems.map((problem) => problem.id)).size).toBe(problems.length);
  });

  it('level weights give each level its share of every turn; weights of one are the plain rotation', () => {
    const kinds = ARITH_KINDS.length;
    const problems = arithTrainProblems({
      seed: 1,
      count: kinds * 13 * 2,
      levels: [1, 2, 3, 4, 5],
      levelWeights: [3, 3, 3, 3, 1],
    });
    const perLevel = new Map<number, number>();
    for (const problem of problems) perLevel.set(problem.level, (perLevel.get(problem.level) ?? 0) + 1);
    expect(Object.fromEntries(perLevel)).toEqual({
      1: kinds * 6,
      2: kinds * 6,
      3: kinds * 6,
      4: kinds * 6,
      5: kinds * 2,
    });
    expect(arithTrainProblems({ seed: 1, count: 50, levels: [1, 2], levelWeights: [1, 1] })).toEqual(
      arithTrainProblems({ seed: 1, count: 50, levels: [1, 2] }),
    );
    expect(() => arithTrainProblems({ seed: 1, count: 5, levels: [1, 2], levelWeights: [1] })).toThrow(
      /1 level weights for 2 levels/,
    );
    expect(() => arithTrainProblems({ seed: 1, count: 5, levels: [1, 2], levelWeights: [1, 0] })).toThrow(
      /weight of level 2/,
    );
  });

  it('train and eval never share a problem, on large samples and across seeds', () => {
    const evalIds = new Set(arithEvalProblems({ count: 2000 }).map((problem) => problem.id));
    const evalCanonical = new Set(
      arithEvalProblems({ count: 2000 }).map((problem) => arithStatement(problem.spec)),
    );
    for (const seed of [1, 2, 'three']) {
      for (const problem of arithTrainProblems({ seed, count: 4000 })) {
        expect(evalIds.has(problem.id)).toBe(false);
        expect(evalCanonical.has(problem.problem)).toBe(false);
      }
    }
  });

  it('the split is a property of the problem: operand order does not move it', () => {
    const random = createSeededRandom('order');
    let evalSeen = 0;
    for (let index = 0; index < 3000; index++) {
      const spec = generateArithSpec('product', 2, random) as Extract<ArithSpec, { kind: 'product' }>;
      const swapped: ArithSpec = { kind: 'product', a: spec.b, b: spec.a };
      expect(arithSplitOf(swapped)).toBe(arithSplitOf(spec));
      if (arithSplitOf(spec) === 'eval') evalSeen++;
    }
    // One in eight goes to eval; 3000 draws give 375 on average.
    expect(evalSeen).toBeGreaterThan(250);
    expect(evalSeen).toBeLessThan(500);
  });

  it('difficulty grows with the level: operands (or powers) get longer', () => {
    for (const kind of ARITH_KINDS) {
      const median = ARITH_LEVELS.map((level) => {
        const sizes = arithTrainProblems({ seed: 5, count: 40, kinds: [kind], levels: [level] }).map(
          (problem) =>
            kind === 'power-digit-sum' && problem.spec.kind === 'power-digit-sum'
              ? (problem.spec.base ** problem.spec.exponent).toString().length
              : operandDigits(problem.spec),
        );
        return sizes.sort((x, y) => x - y)[20]!;
      });
      for (let index = 1; index < median.length; index++) {
        expect(median[index], `${kind} level ${index + 1} vs ${index}`).toBeGreaterThan(median[index - 1]!);
      }
    }
  });

  it('reference answers agree with Python (math, pow, sympy.solve) on every kind and level', () => {
    const problems = [...arithTrainProblems({ seed: 9, count: 96 }), ...arithEvalProblems({ count: 64 })];
    const expected = pythonAnswers(problems.map((problem) => problem.spec));
    expect(expected).toHaveLength(problems.length);
    problems.forEach((problem, index) => {
      expect(problem.answer, problem.problem).toBe(expected[index]);
    });
  });

  it('statements are short and natural', () => {
    const samples = Object.fromEntries(
      ARITH_KINDS.map((kind) => [
        kind,
        arithEvalProblems({ count: 1, kinds: [kind], levels: [1] })[0]!.problem,
      ]),
    ) as Record<ArithKind, string>;
    expect(samples.product).toMatch(/^Compute \d+ \* \d+\.$/);
    expect(samples['mod-power']).toMatch(/^What is \d+\^\d+ mod \d+\?$/);
    expect(samples['power-digit-sum']).toMatch(/^Find the sum of the digits of \d+\^\d+\.$/);
    expect(samples.gcd).toMatch(/^Find gcd\(\d+, \d+\)\.$/);
    expect(samples['linear-equation']).toMatch(/^Solve for x: \d+x [+-] \d+ = -?\d+\.$/);
    expect(samples['linear-system']).toMatch(/^If .+ and .+, what is x\?$/);
    for (const problem of arithTrainProblems({ seed: 2, count: 200 })) {
      expect(problem.problem.length).toBeLessThanOrEqual(110);
    }
  });

  it('the benchmark is the eval split with a fixed seed and size', () => {
    const benchmark = arithBenchmark();
    expect(benchmark).toHaveLength(200);
    expect(benchmark[0]).toEqual({
      id: expect.stringMatching(/^arith-/),
      problem: expect.any(String),
      answer: expect.stringMatching(/^-?\d+$/),
      level: 1,
    });
    expect(arithBenchmark({ count: 10 })).toEqual(benchmark.slice(0, 10));
    expect(benchmark.map((item) => item.id)).toEqual(
      arithEvalProblems({ count: 200 }).map((problem) => problem.id),
    );
  });

  it('a set larger than its space fails with a clear error instead of looping', () => {
    expect(() =>
      arithTrainProblems({ seed: 1, count: 5000, kinds: ['power-digit-sum'], levels: [1] }),
    ).toThrow(ArithSpaceExhaustedError);
  });
});

/** SHA-256 of every id, level, statement and answer of a set: equal before and after a change. */
const fingerprint = (problems: { id: string; level: number; problem: string; answer: string }[]): string =>
  createHash('sha256')
    .update(
      problems.map(({ id, level, problem, answer }) => `${id}|${level}|${problem}|${answer}`).join('\n'),
    )
    .digest('hex')
    .slice(0, 16);

describe('the spaced level (5): numbers in digit groups', () => {
  const spaced = [
    ...arithTrainProblems({ seed: 9, count: 96, levels: [ARITH_SPACED_LEVEL] }),
    ...arithEvalProblems({ count: 32, levels: [ARITH_SPACED_LEVEL] }),
  ];

  it('levels 0..4 keep their problems and ids (fingerprints taken before the spaced level existed)', () => {
    expect(fingerprint(arithTrainProblems({ seed: 0, count: 400, levels: [0, 1, 2, 3, 4] }))).toBe(
      'b0b6b77bec859e32',
    );
    expect(fingerprint(arithEvalProblems({ count: 400, levels: [0, 1, 2, 3, 4] }))).toBe('6fe1030c3f402581');
    expect(fingerprint(arithBenchmark())).toBe('d4937782e6ed7849');
  });

  it('every statement writes a number of four or more digits in groups; without the spaces it is the plain statement', () => {
    for (const problem of spaced) {
      expect(problem.level).toBe(ARITH_SPACED_LEVEL);
      expect(problem.spec.notation).toBe('spaced');
      expect(problem.problem, problem.problem).toMatch(/\d \d{3}\b/);
      expect(problem.problem).not.toMatch(/\d{4}/);
      const { notation: _, ...plain } = problem.spec;
      expect(problem.problem.replace(/(?<=\d) (?=\d)/g, '')).toBe(arithStatement(plain as ArithSpec));
      expect(statedNumbers(problem.spec).some((value) => value >= 1000n || value <= -1000n)).toBe(true);
    }
  });

  it('is a problem of its own: its id and canonical form differ from the same operands written plainly', () => {
    const ids = new Set(spaced.map((problem) => problem.id));
    expect(ids.size).toBe(spaced.length);
    for (const problem of spaced) {
      const { notation: _, ...plain } = problem.spec;
      expect(arithProblemId(plain as ArithSpec)).not.toBe(problem.id);
    }
    const evalIds = new Set(
      arithEvalProblems({ count: 400, levels: [ARITH_SPACED_LEVEL] }).map((problem) => problem.id),
    );
    for (const problem of arithTrainProblems({ seed: 1, count: 2000, levels: [ARITH_SPACED_LEVEL] })) {
      expect(evalIds.has(problem.id)).toBe(false);
    }
  });

  it('covers every kind, and reference answers agree with Python', () => {
    expect(new Set(spaced.map((problem) => problem.spec.kind))).toEqual(new Set(ARITH_KINDS));
    const expected = pythonAnswers(spaced.map((problem) => problem.spec));
    expect(expected).toHaveLength(spaced.length);
    spaced.forEach((problem, index) => {
      expect(problem.answer, problem.problem).toBe(expected[index]);
    });
  });

  it('mixes with the other levels in the usual rotation', () => {
    const mixed = arithTrainProblems({
      seed: 3,
      count: ARITH_KINDS.length * 2 * 2,
      levels: [3, ARITH_SPACED_LEVEL],
    });
    expect(mixed.filter((problem) => problem.level === ARITH_SPACED_LEVEL)).toHaveLength(
      ARITH_KINDS.length * 2,
    );
    expect(
      mixed.filter((problem) => problem.level === 3).every((problem) => problem.spec.notation === undefined),
    ).toBe(true);
  });
});
