/**
 * Float evaluation of a MathNode with a running bound on its absolute error (forward error
 * analysis, each operation adding a few ulps). The grader uses it only to REJECT: two values
 * whose difference exceeds both error bounds are certainly different, so a wrong answer can
 * be turned away without the sandbox. It never decides that two answers are equal.
 */
import type { MathNode } from './math-node.ts';
import { parseDecimal, toNumber } from './rational.ts';

/** A value and a bound on |value − true value|; null when undefined, complex or unsupported. */
export type BoundedFloat = { value: number; error: number } | null;

const ULP = 4 * Number.EPSILON;

function bounded(value: number, error: number): BoundedFloat {
  if (!Number.isFinite(value) || !Number.isFinite(error)) return null;
  return { value, error: error + Math.abs(value) * ULP + Number.MIN_VALUE };
}

/** Evaluates with symbols bound to the given values (missing symbols make it null). */
export function floatValue(node: MathNode, bindings: ReadonlyMap<string, number>): BoundedFloat {
  switch (node.type) {
    case 'number': {
      const exact = parseDecimal(node.text);
      return exact === null ? null : bounded(toNumber(exact), 0);
    }
    case 'symbol': {
      const value = bindings.get(node.name);
      return value === undefined ? null : bounded(value, 0);
    }
    case 'constant':
      if (node.name === 'pi') return bounded(Math.PI, 0);
      if (node.name === 'e') return bounded(Math.E, 0);
      return null;
    case 'negate': {
      const argument = floatValue(node.argument, bindings);
      return argument === null ? null : { value: -argument.value, error: argument.error };
    }
    case 'add': {
      let value = 0;
      let error = 0;
      for (const term of node.terms) {
        const result = floatValue(term, bindings);
        if (result === null) return null;
        value += result.value;
        error += result.error + Math.abs(value) * ULP;
      }
      return bounded(value, error);
    }
    case 'multiply': {
      let current: BoundedFloat = { value: 1, error: 0 };
      for (const factor of node.factors) {
        const result = floatValue(factor, bindings);
        if (result === null || current === null) return null;
        current = product(current, result);
      }
      return current;
    }
    case 'divide': {
      const numerator = floatValue(node.numerator, bindings);
      const denominator = floatValue(node.denominator, bindings);
      if (numerator === null || denominator === null) return null;
      return quotient(numerator, denominator);
    }
    case 'power':
      return powerValue(floatValue(node.base, bindings), floatValue(node.exponent, bindings));
    case 'factorial': {
      const argument = floatValue(node.argument, bindings);
      if (argument === null || argument.error > 1e-9) return null;
      const n = Math.round(argument.value);
      if (Math.abs(n - argument.value) > 1e-9 || n < 0 || n > 170) return null;
      let value = 1;
      for (let k = n; k > 1; k -= node.step) value *= k;
      return bounded(value, value * n * ULP);
    }
    case 'call':
      return callValue(
        node.name,
        node.args.map((arg) => floatValue(arg, bindings)),
      );
  }
}

function product(a: NonNullable<BoundedFloat>, b: NonNullable<BoundedFloat>): BoundedFloat {
  const value = a.value * b.value;
  return bounded(value, Math.abs(a.value) * b.error + Math.abs(b.value) * a.error + a.error * b.error);
}

function quotient(a: NonNullable<BoundedFloat>, b: NonNullable<BoundedFloat>): BoundedFloat {
  const margin = Math.abs(b.value) - b.error;
  if (margin <= 0) return null;
  const value = a.value / b.value;
  return bounded(value, (a.error + Math.abs(value) * b.error) / margin);
}

function powerValue(base: BoundedFloat, exponent: BoundedFloat): BoundedFloat {
  if (base === null || exponent === null) return null;
  const rounded = Math.round(exponent.value);
  // An exponent built from integers is exact up to its own rounding error.
  const integer = Math.abs(rounded - exponent.value) <= exponent.error && exponent.error < 1e-9;
  const y = integer ? rounded : exponent.value;
  const dy = integer ? 0 : exponent.error;
  const margin = Math.abs(base.value) - base.error;
  if (margin <= 0 || (!integer && base.value <= 0)) return null;
  const value = base.value ** y;
  // d(x^y) = x^y · (y·dx/x + ln|x|·dy).
  const relative = (Math.abs(y) * base.error) / margin + Math.abs(Math.log(Math.abs(base.value))) * dy;
  if (relative > 0.1) return null;
  return bounded(value, Math.abs(value) * relative * 1.2);
}

function callValue(name: string, args: BoundedFloat[]): BoundedFloat {
  const [first, second] = args;
  if (first === undefined || first === null || second === null) return null;
  const { value: x, error: dx } = first;
  switch (name) {
    case 'sqrt':
      return powerValue(first, { value: 0.5, error: 0 });
    case 'root':
      return second === undefined ? null : powerValue(first, quotient({ value: 1, error: 0 }, second));
    case 'abs':
      return { value: Math.abs(x), error: dx };
    case 'exp':
      return dx > 0.1 ? null : bounded(Math.exp(x), Math.exp(x) * dx * 1.2);
    case 'log': {
      if (x - dx <= 0) return null;
      const natural = bounded(Math.log(x), dx / (x - dx));
      if (second === undefined || natural === null) return natural;
      const logBase = callValue('log', [second]);
      return logBase === null ? null : quotient(natural, logBase);
    }
    case 'sin':
      return bounded(Math.sin(x), dx);
    case 'cos':
      return bounded(Math.cos(x), dx);
    case 'tan':
    case 'cot':
    case 'sec':
    case 'csc': {
      const sine = bounded(Math.sin(x), dx);
      const cosine = bounded(Math.cos(x), dx);
      if (sine === null || cosine === null) return null;
      const one = { value: 1, error: 0 };
      if (name === 'tan') return quotient(sine, cosine);
      if (name === 'cot') return quotient(cosine, sine);
      return quotient(one, name === 'sec' ? cosine : sine);
    }
    default:
      return null;
  }
}

/** True when two bounded values certainly differ, with a relative safety margin on top. */
export function certainlyDifferent(a: BoundedFloat, b: BoundedFloat): boolean {
  if (a === null || b === null) return false;
  const difference = Math.abs(a.value - b.value);
  const scale = Math.max(Math.abs(a.value), Math.abs(b.value));
  return difference > 4 * (a.error + b.error) + 1e-9 * scale;
}
