/**
 * Exact evaluation of a MathNode to a rational number, when it is one: integers, decimals,
 * fractions, integer powers, factorials, perfect-square roots, |x|, floor, ceiling, binomials.
 * Size guards turn towers like 10^{10^{10}} and 9!!!!!! into `overflow` instead of work.
 */
import type { MathNode } from './math-node.ts';
import {
  add,
  divide,
  factorial,
  isInteger,
  multiply,
  negate,
  parseDecimal,
  power,
  type Rational,
  rational,
} from './rational.ts';

export type ExactValue =
  | { kind: 'value'; value: Rational }
  /** A constant too large (or too deep) to compute within the size guards. */
  | { kind: 'overflow' }
  /** Not a rational constant (symbols, π, √2, an undefined operation). */
  | { kind: 'inexact' };

const INEXACT: ExactValue = { kind: 'inexact' };
const OVERFLOW: ExactValue = { kind: 'overflow' };

/** Evaluates a tree exactly; `overflow` wins over `inexact` so unsafe constants are never sent on. */
export function exactValue(node: MathNode): ExactValue {
  switch (node.type) {
    case 'number': {
      const value = parseDecimal(node.text);
      return value === null ? OVERFLOW : { kind: 'value', value };
    }
    case 'symbol':
    case 'constant':
      return INEXACT;
    case 'negate':
      return map(exactValue(node.argument), (value) => negate(value));
    case 'add':
      return fold(node.terms.map(exactValue), add);
    case 'multiply':
      return fold(node.factors.map(exactValue), multiply);
    case 'divide': {
      const numerator = exactValue(node.numerator);
      const denominator = exactValue(node.denominator);
      if (numerator.kind === 'overflow' || denominator.kind === 'overflow') return OVERFLOW;
      if (numerator.kind !== 'value' || denominator.kind !== 'value') return INEXACT;
      if (denominator.value.num === 0n) return INEXACT;
      return fromResult(divide(numerator.value, denominator.value));
    }
    case 'power': {
      const base = exactValue(node.base);
      const exponent = exactValue(node.exponent);
      if (base.kind === 'overflow' || exponent.kind === 'overflow') return OVERFLOW;
      if (base.kind !== 'value' || exponent.kind !== 'value') return INEXACT;
      if (!isInteger(exponent.value)) return rootPower(base.value, exponent.value);
      if (base.value.num === 0n && exponent.value.num <= 0n) return INEXACT;
      return fromResult(power(base.value, exponent.value));
    }
    case 'factorial': {
      const argument = exactValue(node.argument);
      if (argument.kind !== 'value') return argument;
      if (!isInteger(argument.value) || argument.value.num < 0n) return INEXACT;
      return fromResult(factorial(argument.value, node.step));
    }
    case 'call':
      return callValue(node.name, node.args.map(exactValue));
  }
}

function fromResult(value: Rational | null): ExactValue {
  return value === null ? OVERFLOW : { kind: 'value', value };
}

function map(value: ExactValue, transform: (value: Rational) => Rational | null): ExactValue {
  return value.kind === 'value' ? fromResult(transform(value.value)) : value;
}

function fold(values: ExactValue[], combine: (a: Rational, b: Rational) => Rational | null): ExactValue {
  if (values.some((value) => value.kind === 'overflow')) return OVERFLOW;
  let result: Rational | null = null;
  for (const value of values) {
    if (value.kind !== 'value') return INEXACT;
    result = result === null ? value.value : combine(result, value.value);
    if (result === null) return OVERFLOW;
  }
  return result === null ? INEXACT : { kind: 'value', value: result };
}

/** Exact integer k-th root of a non-negative BigInt, or null (Newton's method from a float guess). */
function integerRoot(value: bigint, k: number): bigint | null {
  if (value < 0n) return null;
  if (value < 2n) return value;
  const approximate = Number(value);
  if (!Number.isFinite(approximate)) return null;
  const bigK = BigInt(k);
  let guess = BigInt(Math.ceil(approximate ** (1 / k))) + 1n;
  for (let step = 0; step < 200; step++) {
    const next = ((bigK - 1n) * guess + value / guess ** (bigK - 1n)) / bigK;
    if (next >= guess) break;
    guess = next;
  }
  for (const candidate of [guess - 1n, guess, guess + 1n]) {
    if (candidate >= 0n && candidate ** bigK === value) return candidate;
  }
  return null;
}

/** x^(p/q) when x is a perfect q-th power, e.g. 8^{2/3} = 4. */
function rootPower(base: Rational, exponent: Rational): ExactValue {
  if (exponent.den > 16n) return INEXACT;
  const k = Number(exponent.den);
  const num = integerRoot(base.num, k);
  const den = integerRoot(base.den, k);
  if (num === null || den === null) return INEXACT;
  return fromResult(power({ num, den }, { num: exponent.num, den: 1n }));
}

function callValue(name: string, args: ExactValue[]): ExactValue {
  if (args.some((arg) => arg.kind === 'overflow')) return OVERFLOW;
  const values: Rational[] = [];
  for (const arg of args) {
    if (arg.kind !== 'value') return INEXACT;
    values.push(arg.value);
  }
  const [first, second] = values;
  if (first === undefined) return INEXACT;
  switch (name) {
    case 'sqrt':
      return rootPower(first, { num: 1n, den: 2n });
    case 'root':
      return second !== undefined && isInteger(second) && second.num > 0n && second.num <= 16n
        ? rootPower(first, { num: 1n, den: second.num })
        : INEXACT;
    case 'abs':
      return { kind: 'value', value: first.num < 0n ? negate(first) : first };
    case 'floor':
    case 'ceiling': {
      const quotient = first.num / first.den - (first.num < 0n && first.num % first.den !== 0n ? 1n : 0n);
      const result = name === 'ceiling' && !isInteger(first) ? quotient + 1n : quotient;
      return fromResult(rational(result));
    }
    case 'binomial': {
      if (second === undefined || !isInteger(first) || !isInteger(second)) return INEXACT;
      if (second.num < 0n || second.num > first.num || first.num > 100_000n) return INEXACT;
      // biome-ignore lint/complexity/useMathMinMax: Math.min does not take BigInt
      const k = second.num < first.num - second.num ? second.num : first.num - second.num;
      if (k > 5_000n) return OVERFLOW;
      let result = 1n;
      for (let index = 0n; index < k; index++) result = (result * (first.num - index)) / (index + 1n);
      return fromResult(rational(result));
    }
    default:
      return INEXACT;
  }
}
