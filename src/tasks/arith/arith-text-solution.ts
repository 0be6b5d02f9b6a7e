/**
 * Text-only solutions: step-by-step reasoning with every intermediate result computed here
 * with BigInt (long multiplication by partial products, running sums, square-and-multiply
 * mod m, exact repeated squaring, Euclid's algorithm, Cramer's rule). Each step is one line
 * `expression = value` (or `≡` under a stated modulus), so a reader or a test can check it.
 */
import type { TaskProblem, TaskSolution } from '../types.ts';
import { type ArithProblem, type ArithSpec, arithAnswerValue } from './arith-spec.ts';

/** A negative number after an operator is written in parentheses: `3 * (-1)`. */
const operand = (value: bigint): string => (value < 0n ? `(${value})` : String(value));

/** The statement part of a problem, without its operands (what a dataset record stores). */
export function taskProblemOf(problem: ArithProblem): TaskProblem {
  const { id, family, level, problem: text, answer } = problem;
  return { id, family, level, problem: text, answer };
}

/** Nonzero place values of `value`, largest first: 90771 -> 90000, 700, 70, 1. */
function placeParts(value: bigint): bigint[] {
  const digits = value.toString();
  return [...digits]
    .map((digit, index) => BigInt(digit) * 10n ** BigInt(digits.length - 1 - index))
    .filter((part) => part !== 0n);
}

/** Lines adding `values` left to right; returns the total. */
function runningSum(values: bigint[], lines: string[]): bigint {
  let total = values[0] ?? 0n;
  for (const value of values.slice(1)) {
    const next = total + value;
    lines.push(`${total} + ${value} = ${next}`);
    total = next;
  }
  return total;
}

function productSteps(a: bigint, b: bigint, lines: string[]): bigint {
  // Multiply by the factor with fewer nonzero digits: fewer partial products.
  const [multiplicand, multiplier] = placeParts(a).length < placeParts(b).length ? [b, a] : [a, b];
  const parts = placeParts(multiplier);
  if (parts.length > 1) lines.push(`Split ${multiplier} = ${parts.join(' + ')}.`);
  const partials = parts.map((part) => {
    const partial = multiplicand * part;
    lines.push(`${multiplicand} * ${part} = ${partial}`);
    return partial;
  });
  if (partials.length > 1) lines.push('Add the partial products:');
  return runningSum(partials, lines);
}

/** Set bits of `exponent` as powers of two, largest first: 123 -> 64, 32, 16, 8, 2, 1. */
function binaryParts(exponent: bigint): bigint[] {
  const parts: bigint[] = [];
  for (let bit = 1n; bit <= exponent; bit <<= 1n) if (exponent & bit) parts.unshift(bit);
  return parts;
}

/** `P ≡ R` when reducing changes the value, else nothing: the tail of a congruence line. */
const reduced = (value: bigint, modulus: bigint): string => (value >= modulus ? ` ≡ ${value % modulus}` : '');

function modPowerSteps(base: bigint, exponent: bigint, modulus: bigint, lines: string[]): bigint {
  lines.push(`Work mod ${modulus}.`);
  const parts = binaryParts(exponent);
  if (parts.length > 1) lines.push(`${exponent} = ${parts.join(' + ')}`);
  let square = base % modulus;
  if (base >= modulus) lines.push(`${base} ≡ ${square}`);
  const squares = new Map<bigint, bigint>([[1n, square]]);
  for (let power = 2n; power <= (parts[0] ?? 1n); power <<= 1n) {
    const full = square * square;
    const first = power === 2n && square === base ? '' : ` ≡ ${square}^2`; // `b^2 ≡ b^2` says nothing
    lines.push(`${base}^${power}${first} = ${full}${reduced(full, modulus)}`);
    square = full % modulus;
    squares.set(power, square);
  }
  let accumulated = squares.get(parts[0] ?? 1n)!;
  let accumulatedExponent = parts[0] ?? 1n;
  for (const part of parts.slice(1)) {
    const full = accumulated * squares.get(part)!;
    accumulatedExponent += part;
    lines.push(
      `${base}^${accumulatedExponent} ≡ ${accumulated} * ${squares.get(part)} = ${full}${reduced(full, modulus)}`,
    );
    accumulated = full % modulus;
  }
  return accumulated;
}

function digitSumSteps(base: bigint, exponent: bigint, lines: string[]): bigint {
  const parts = binaryParts(exponent);
  let square = base;
  const squares = new Map<bigint, bigint>([[1n, base]]);
  for (let power = 2n; power <= (parts[0] ?? 1n); power <<= 1n) {
    const next = square * square;
    lines.push(power === 2n ? `${base}^2 = ${next}` : `${base}^${power} = ${square}^2 = ${next}`);
    square = next;
    squares.set(power, square);
  }
  let value = squares.get(parts[0] ?? 1n)!;
  let valueExponent = parts[0] ?? 1n;
  for (const part of parts.slice(1)) {
    const next = value * squares.get(part)!;
    valueExponent += part;
    lines.push(`${base}^${valueExponent} = ${value} * ${squares.get(part)} = ${next}`);
    value = next;
  }
  const digits = [...value.toString()].filter((digit) => digit !== '0');
  const total = digits.reduce((sum, digit) => sum + BigInt(digit), 0n);
  lines.push(`Digit sum (zeros skipped): ${digits.join('+')} = ${total}`);
  return total;
}

function euclidSteps(a: bigint, b: bigint, lines: string[]): bigint {
  let [larger, smaller] = a >= b ? [a, b] : [b, a];
  lines.push("Euclid's algorithm:");
  while (smaller !== 0n) {
    const quotient = larger / smaller;
    const remainder = larger % smaller;
    lines.push(`${larger} = ${quotient} * ${smaller} + ${remainder}`);
    [larger, smaller] = [smaller, remainder];
  }
  lines.push(`The last nonzero remainder is ${larger}, so gcd(${a}, ${b}) = ${larger}.`);
  return larger;
}

function stepsFor(spec: ArithSpec, lines: string[]): bigint {
  switch (spec.kind) {
    case 'product':
      return productSteps(spec.a, spec.b, lines);
    case 'sum':
      lines.push('Add left to right:');
      return runningSum(spec.terms, lines);
    case 'mod-power':
      return modPowerSteps(spec.base, spec.exponent, spec.modulus, lines);
    case 'power-digit-sum':
      return digitSumSteps(spec.base, spec.exponent, lines);
    case 'gcd':
      return euclidSteps(spec.a, spec.b, lines);
    case 'lcm': {
      const divisor = euclidSteps(spec.a, spec.b, lines);
      const value = (spec.a * spec.b) / divisor;
      lines.push(`lcm = ${spec.a} * ${spec.b} / ${divisor} = ${value}`);
      return value;
    }
    case 'linear-equation': {
      const { a, b, c } = spec;
      const moved = c - b;
      lines.push(`${a}x = ${c} ${b < 0n ? '+' : '-'} ${b < 0n ? -b : b} = ${moved}`);
      const x = moved / a;
      lines.push(`x = ${moved} / ${a} = ${x}`);
      lines.push(`Check: ${a} * ${operand(x)} ${b < 0n ? '-' : '+'} ${b < 0n ? -b : b} = ${a * x + b}`);
      return x;
    }
    case 'linear-system': {
      const { a1, b1, c1, a2, b2, c2 } = spec;
      const determinant = a1 * b2 - b1 * a2;
      const numerator = c1 * b2 - b1 * c2;
      lines.push("Cramer's rule:");
      lines.push(`D = ${a1} * ${operand(b2)} - ${operand(b1)} * ${a2} = ${determinant}`);
      lines.push(`Dx = ${c1} * ${operand(b2)} - ${operand(b1)} * ${operand(c2)} = ${numerator}`);
      const x = numerator / determinant;
      lines.push(`x = ${numerator} / ${operand(determinant)} = ${x}`);
      return x;
    }
  }
}

/** A text-only solution: one model segment, `<think>steps</think>` then the boxed answer. */
export function writeArithTextSolution(problem: ArithProblem): TaskSolution {
  const lines: string[] = [];
  const value = stepsFor(problem.spec, lines);
  if (value !== arithAnswerValue(problem.spec)) {
    throw new Error(`arith text steps for ${problem.id} reached ${value}, not ${problem.answer}`);
  }
  const text = `<think>${lines.join('\n')}</think>\nThe answer is \\boxed{${value}}.`;
  return { problem: taskProblemOf(problem), style: 'text', segments: [{ kind: 'model', text }] };
}
