/**
 * What an arithmetic problem is: its kind and exact operands (`ArithSpec`), and the three
 * things derived from them alone: the canonical form (identity for splits and dedup), the
 * terse statement a model reads, and the reference answer, computed with BigInt. A spec with
 * `notation: 'spaced'` (the spaced level) writes its numbers in digit groups (`12 345`); it is
 * a different problem from the plain one (its own canonical form, id and side of the split).
 */
import type { TaskProblem } from '../types.ts';
import { groupDigits } from './arith-digit-groups.ts';

/** How the statement writes numbers: plain digits (absent), or groups of three split by spaces. */
export type ArithNotation = 'spaced';

/** The operands of one problem, by kind, and how its statement writes them. */
export type ArithSpec = ArithOperands & { notation?: ArithNotation };

/** The operands of one problem, by kind. Linear equations read `a x + b = c`. */
export type ArithOperands =
  | { kind: 'product'; a: bigint; b: bigint }
  | { kind: 'sum'; terms: bigint[] }
  | { kind: 'mod-power'; base: bigint; exponent: bigint; modulus: bigint }
  | { kind: 'power-digit-sum'; base: bigint; exponent: bigint }
  | { kind: 'gcd'; a: bigint; b: bigint }
  | { kind: 'lcm'; a: bigint; b: bigint }
  | { kind: 'linear-equation'; a: bigint; b: bigint; c: bigint }
  /** `a1 x + b1 y = c1`, `a2 x + b2 y = c2`, asking for x (integer by construction). */
  | {
      kind: 'linear-system';
      a1: bigint;
      b1: bigint;
      c1: bigint;
      a2: bigint;
      b2: bigint;
      c2: bigint;
    };

export type ArithKind = ArithSpec['kind'];

export const ARITH_KINDS: readonly ArithKind[] = [
  'product',
  'sum',
  'mod-power',
  'power-digit-sum',
  'gcd',
  'lcm',
  'linear-equation',
  'linear-system',
];

/** A task problem that keeps its operands, so solution writers need not parse the statement. */
export type ArithProblem = TaskProblem & { family: 'arith'; spec: ArithSpec };

const sortedPair = (a: bigint, b: bigint): [bigint, bigint] => (a <= b ? [a, b] : [b, a]);

/**
 * The canonical form: kind and operands, with operands of commutative operations sorted (and
 * the two equations of a system sorted), so `12 * 34` and `34 * 12` are the same problem. A
 * spaced problem's form is `spaced:` and the plain one's.
 */
export function canonicalArith(spec: ArithSpec): string {
  return spec.notation === 'spaced' ? `spaced:${canonicalOperands(spec)}` : canonicalOperands(spec);
}

function canonicalOperands(spec: ArithSpec): string {
  switch (spec.kind) {
    case 'product':
    case 'gcd':
    case 'lcm':
      return `${spec.kind}:${sortedPair(spec.a, spec.b).join(',')}`;
    case 'sum':
      return `sum:${[...spec.terms].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)).join(',')}`;
    case 'mod-power':
      return `mod-power:${spec.base},${spec.exponent},${spec.modulus}`;
    case 'power-digit-sum':
      return `power-digit-sum:${spec.base},${spec.exponent}`;
    case 'linear-equation':
      return `linear-equation:${spec.a},${spec.b},${spec.c}`;
    case 'linear-system': {
      const equations = [`${spec.a1},${spec.b1},${spec.c1}`, `${spec.a2},${spec.b2},${spec.c2}`].sort();
      return `linear-system:${equations.join(';')}`;
    }
  }
}

/** How a statement writes one number. */
type NumberWriter = (value: bigint) => string;

/** `3x`, `-x`, `x`, for a coefficient before a variable. */
function term(coefficient: bigint, variable: string, write: NumberWriter): string {
  if (coefficient === 1n) return variable;
  if (coefficient === -1n) return `-${variable}`;
  return `${write(coefficient)}${variable}`;
}

/** ` + 5`, ` - 5`, ` + 5y`, ` - y`, for a term after the first. */
function signed(coefficient: bigint, write: NumberWriter, variable = ''): string {
  const magnitude = coefficient < 0n ? -coefficient : coefficient;
  const body = variable === '' ? write(magnitude) : term(magnitude, variable, write);
  return `${coefficient < 0n ? ' - ' : ' + '}${body}`;
}

/** The numbers a statement shows, in the order it shows them. */
export function statedNumbers(spec: ArithSpec): bigint[] {
  switch (spec.kind) {
    case 'product':
    case 'gcd':
    case 'lcm':
      return [spec.a, spec.b];
    case 'sum':
      return spec.terms;
    case 'mod-power':
      return [spec.base, spec.exponent, spec.modulus];
    case 'power-digit-sum':
      return [spec.base, spec.exponent];
    case 'linear-equation':
      return [spec.a, spec.b, spec.c];
    case 'linear-system':
      return [spec.a1, spec.b1, spec.c1, spec.a2, spec.b2, spec.c2];
  }
}

/** The statement a model reads: short, natural, one sentence. */
export function arithStatement(spec: ArithSpec): string {
  const n: NumberWriter = spec.notation === 'spaced' ? (value) => groupDigits(value, ' ') : String;
  switch (spec.kind) {
    case 'product':
      return `Compute ${n(spec.a)} * ${n(spec.b)}.`;
    case 'sum':
      return `Compute ${spec.terms.map(n).join(' + ')}.`;
    case 'mod-power':
      return `What is ${n(spec.base)}^${n(spec.exponent)} mod ${n(spec.modulus)}?`;
    case 'power-digit-sum':
      return `Find the sum of the digits of ${n(spec.base)}^${n(spec.exponent)}.`;
    case 'gcd':
      return `Find gcd(${n(spec.a)}, ${n(spec.b)}).`;
    case 'lcm':
      return `Find lcm(${n(spec.a)}, ${n(spec.b)}).`;
    case 'linear-equation':
      return `Solve for x: ${term(spec.a, 'x', n)}${signed(spec.b, n)} = ${n(spec.c)}.`;
    case 'linear-system': {
      const first = `${term(spec.a1, 'x', n)}${signed(spec.b1, n, 'y')} = ${n(spec.c1)}`;
      const second = `${term(spec.a2, 'x', n)}${signed(spec.b2, n, 'y')} = ${n(spec.c2)}`;
      return `If ${first} and ${second}, what is x?`;
    }
  }
}

/** a^e mod m by square-and-multiply (m > 0). */
export function modPow(base: bigint, exponent: bigint, modulus: bigint): bigint {
  let result = 1n % modulus;
  let square = ((base % modulus) + modulus) % modulus;
  for (let rest = exponent; rest > 0n; rest >>= 1n) {
    if (rest & 1n) result = (result * square) % modulus;
    square = (square * square) % modulus;
  }
  return result;
}

/** Greatest common divisor of |a| and |b|. */
export function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

/** The reference answer as an exact integer. */
export function arithAnswerValue(spec: ArithSpec): bigint {
  switch (spec.kind) {
    case 'product':
      return spec.a * spec.b;
    case 'sum':
      return spec.terms.reduce((total, value) => total + value, 0n);
    case 'mod-power':
      return modPow(spec.base, spec.exponent, spec.modulus);
    case 'power-digit-sum':
      return [...(spec.base ** spec.exponent).toString()].reduce((total, digit) => total + BigInt(digit), 0n);
    case 'gcd':
      return gcd(spec.a, spec.b);
    case 'lcm':
      return (spec.a * spec.b) / gcd(spec.a, spec.b);
    case 'linear-equation':
      return (spec.c - spec.b) / spec.a;
    case 'linear-system':
      return (spec.c1 * spec.b2 - spec.b1 * spec.c2) / (spec.a1 * spec.b2 - spec.b1 * spec.a2);
  }
}
