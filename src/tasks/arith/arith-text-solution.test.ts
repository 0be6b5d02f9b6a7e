import { describe, expect, it } from 'vitest';
import { extractBoxedAnswer } from '../../shared/boxed-answer.ts';
import { ARITH_SPACED_LEVEL } from './arith-generator.ts';
import { arithEvalProblems, arithTrainProblems } from './arith-problems.ts';
import { writeArithTextSolution } from './arith-text-solution.ts';

/**
 * An independent checker for the claims in a text solution: integer expressions with
 * + - * / ^ mod and parentheses, evaluated with BigInt (exact, or reduced mod m for `≡`).
 */
function evaluate(expression: string, modulus: bigint | null): bigint {
  const explicit = /^(.*)\s+mod\s+(\d+)$/.exec(expression.trim());
  if (explicit) return evaluate(explicit[1]!, BigInt(explicit[2]!));
  const tokens = expression.match(/\d+|[-+*/^()]/g) ?? [];
  if (tokens.join('') !== expression.replace(/\s+/g, '')) throw new Error(`cannot parse "${expression}"`);
  let position = 0;
  const reduce = (value: bigint) => (modulus === null ? value : ((value % modulus) + modulus) % modulus);
  const peek = () => tokens[position];
  const take = () => tokens[position++]!;
  const power = (base: bigint, exponent: bigint): bigint => {
    if (modulus === null) return base ** exponent;
    let result = 1n;
    for (
      let index = exponent, square = reduce(base);
      index > 0n;
      index >>= 1n, square = reduce(square * square)
    ) {
      if (index & 1n) result = reduce(result * square);
    }
    return result;
  };
  const atom = (): bigint => {
    const token = take();
    if (token === '-') return -atom();
    if (token === '(') {
      const value = sum();
      if (take() !== ')') throw new Error(`unbalanced "${expression}"`);
      return value;
    }
    if (!/^\d+$/.test(token)) throw new Error(`unexpected "${token}" in "${expression}"`);
    return BigInt(token);
  };
  const factor = (): bigint => {
    const base = atom();
    if (peek() !== '^') return base;
    take();
    return power(base, atom());
  };
  const product = (): bigint => {
    let value = factor();
    while (peek() === '*' || peek() === '/') {
      const operator = take();
      const right = factor();
      if (operator === '*') value = reduce(value * right);
      else {
        if (value % right !== 0n) throw new Error(`inexact division in "${expression}"`);
        value /= right;
      }
    }
    return value;
  };
  const sum = (): bigint => {
    let value = product();
    while (peek() === '+' || peek() === '-') value = take() === '+' ? value + product() : value - product();
    return reduce(value);
  };
  const value = sum();
  if (position !== tokens.length) throw new Error(`trailing tokens in "${expression}"`);
  return value;
}

/** Checks every `=` / `≡` link between evaluable terms of every line; returns how many. */
function checkClaims(text: string): number {
  const think = /<think>([\s\S]*)<\/think>/.exec(text)?.[1];
  if (think === undefined) throw new Error('no <think> block');
  let modulus: bigint | null = null;
  let checked = 0;
  for (const line of think.split('\n')) {
    const stated = /^Work mod (\d+)\.$/.exec(line);
    if (stated) {
      modulus = BigInt(stated[1]!);
      continue;
    }
    const claim = line.replace(/\.$/, '').split(': ').at(-1)!;
    const parts = claim.split(/\s*(=|≡)\s*/);
    for (let index = 2; index < parts.length; index += 2) {
      const [left, relation, right] = [parts[index - 2]!, parts[index - 1]!, parts[index]!];
      const evaluable = (term: string) => /^[-\d\s+*/^()]+(mod\s+\d+)?$/.test(term);
      if (!evaluable(left) || !evaluable(right)) continue;
      if (relation === '=') expect(evaluate(left, null), line).toBe(evaluate(right, null));
      else {
        expect(modulus, `congruence without a modulus: ${line}`).not.toBeNull();
        expect(evaluate(left, modulus), line).toBe(evaluate(right, modulus));
      }
      checked++;
    }
  }
  return checked;
}

describe('arith text solutions', () => {
  it('the checker itself rejects a wrong claim', () => {
    expect(() => checkClaims('<think>12 * 12 = 145</think>')).toThrow();
    expect(() => checkClaims('<think>Work mod 7.\n3^2 ≡ 9 ≡ 3</think>')).toThrow();
    expect(checkClaims('<think>Work mod 7.\n3^2 = 9 ≡ 2\n3^100 mod 7 = 4</think>')).toBe(3);
  });

  it('every intermediate step is correct arithmetic and the box holds the reference answer', () => {
    const problems = [
      ...arithTrainProblems({ seed: 7, count: 160 }),
      ...arithEvalProblems({ count: 80, levels: [3, 4] }),
    ];
    for (const problem of problems) {
      const solution = writeArithTextSolution(problem);
      expect(solution.style).toBe('text');
      expect(solution.segments).toHaveLength(1);
      const text = solution.segments[0]!.text;
      expect(text).toMatch(/^<think>[\s\S]*<\/think>\nThe answer is \\boxed\{-?\d+\}\.$/);
      expect(extractBoxedAnswer(text)).toBe(problem.answer);
      expect(checkClaims(text), `${problem.problem}\n${text}`).toBeGreaterThanOrEqual(1);
    }
  });

  it('long multiplication shows one partial product per nonzero digit', () => {
    const [problem] = arithTrainProblems({ seed: 3, count: 1, kinds: ['product'], levels: [3] });
    const text = writeArithTextSolution(problem!).segments[0]!.text;
    const spec = problem!.spec as { a: bigint; b: bigint };
    const nonZero = (value: bigint) => [...value.toString()].filter((digit) => digit !== '0').length;
    const partials = text.split('\n').filter((line) => /^\d+ \* \d+ = \d+$/.test(line));
    expect(partials.length).toBe(Math.min(nonZero(spec.a), nonZero(spec.b)));
  });

  it('records keep no operands, so they serialise as JSON', () => {
    const [problem] = arithTrainProblems({ seed: 1, count: 1 });
    const solution = writeArithTextSolution(problem!);
    expect(Object.keys(solution.problem).sort()).toEqual(['answer', 'family', 'id', 'level', 'problem']);
    expect(JSON.parse(JSON.stringify(solution))).toEqual(solution);
  });

  it('the spaced level: the steps of the plain operands, every claim checked', () => {
    for (const problem of arithTrainProblems({ seed: 6, count: 48, levels: [ARITH_SPACED_LEVEL] })) {
      const text = writeArithTextSolution(problem).segments[0]!.text;
      expect(extractBoxedAnswer(text)).toBe(problem.answer);
      expect(checkClaims(text), `${problem.problem}\n${text}`).toBeGreaterThanOrEqual(1);
    }
  });
});
