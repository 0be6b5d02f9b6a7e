/**
 * Exact rational numbers over BigInt, always in lowest terms with a positive denominator.
 * Every operation that could grow without bound (powers, factorials) is guarded by a size
 * limit and returns null instead, so adversarial answers cannot stall the grader.
 */

export type Rational = { readonly num: bigint; readonly den: bigint };

/** The largest number of bits a numerator or denominator may reach (≈ 60,000 decimal digits). */
export const MAX_RATIONAL_BITS = 200_000;
/** The largest n whose n! is computed exactly. */
export const MAX_FACTORIAL = 5_000;

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

function bitLength(value: bigint): number {
  return (value < 0n ? -value : value).toString(16).length * 4;
}

/** A rational in lowest terms; null for a zero denominator or one too large. */
export function rational(num: bigint, den = 1n): Rational | null {
  if (den === 0n) return null;
  if (bitLength(num) > MAX_RATIONAL_BITS || bitLength(den) > MAX_RATIONAL_BITS) return null;
  if (den === 1n) return { num, den };
  const divisor = gcd(num, den);
  const sign = den < 0n ? -1n : 1n;
  return divisor === 0n ? { num: 0n, den: 1n } : { num: (sign * num) / divisor, den: (sign * den) / divisor };
}

/** Parses `12`, `-0.5`, `.35`, `025`, `1.5e-3`, `2E10`; null for anything else or too large. */
export function parseDecimal(text: string): Rational | null {
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,6}))?$/.exec(text);
  if (!match) return null;
  const [, sign = '', whole = '', fraction = '', exponentText] = match;
  if (whole === '' && fraction === '') return null;
  const exponent = (exponentText === undefined ? 0 : Number(exponentText)) - fraction.length;
  if (Math.abs(exponent) > 10_000) return null;
  const digits = BigInt((whole || '0') + fraction) * (sign === '-' ? -1n : 1n);
  return exponent >= 0
    ? rational(digits * 10n ** BigInt(exponent))
    : rational(digits, 10n ** BigInt(-exponent));
}

export const add = (a: Rational, b: Rational): Rational | null =>
  rational(a.num * b.den + b.num * a.den, a.den * b.den);
export const subtract = (a: Rational, b: Rational): Rational | null =>
  rational(a.num * b.den - b.num * a.den, a.den * b.den);
export const multiply = (a: Rational, b: Rational): Rational | null => rational(a.num * b.num, a.den * b.den);
export const divide = (a: Rational, b: Rational): Rational | null => rational(a.num * b.den, a.den * b.num);
export const negate = (a: Rational): Rational => ({ num: -a.num, den: a.den });
export const equals = (a: Rational, b: Rational): boolean => a.num === b.num && a.den === b.den;
export const isInteger = (a: Rational): boolean => a.den === 1n;

/** a^b for an integer b; null when b is not an integer or the result would be too large. */
export function power(base: Rational, exponent: Rational): Rational | null {
  if (!isInteger(exponent)) return null;
  const e = exponent.num;
  if (e === 0n) return base.num === 0n ? null : { num: 1n, den: 1n };
  if (base.num === 0n) return e > 0n ? base : null;
  const absBase = base.num < 0n ? -base.num : base.num;
  if (absBase === 1n && base.den === 1n) return { num: e % 2n === 0n ? 1n : base.num, den: 1n };
  const magnitude = e < 0n ? -e : e;
  // Guard the size before computing: bits(result) ≈ |e| · bits(base).
  const bits = Math.max(bitLength(base.num), bitLength(base.den));
  if (magnitude > BigInt(MAX_RATIONAL_BITS) || Number(magnitude) * bits > MAX_RATIONAL_BITS) return null;
  const raised = { num: base.num ** magnitude, den: base.den ** magnitude };
  return e > 0n ? rational(raised.num, raised.den) : rational(raised.den, raised.num);
}

/** n! (step 1) or n!! (step 2) for a non-negative integer n up to MAX_FACTORIAL; else null. */
export function factorial(value: Rational, step: 1 | 2 = 1): Rational | null {
  if (!isInteger(value) || value.num < 0n || value.num > BigInt(MAX_FACTORIAL)) return null;
  const key = `${value.num}:${step}`;
  let result = factorialCache.get(key);
  if (result === undefined) {
    // Terms n, n-step, …, down to 1 or 2; multiplied as a balanced tree, whose cost is far
    // below a running product's for thousands of terms.
    const count = value.num <= 1n ? 0n : (value.num - 2n) / BigInt(step) + 1n;
    result = productOfTerms(value.num, BigInt(step), count);
    if (factorialCache.size >= FACTORIAL_CACHE_SIZE) factorialCache.clear();
    factorialCache.set(key, result);
  }
  return rational(result);
}

const FACTORIAL_CACHE_SIZE = 64;
const factorialCache = new Map<string, bigint>();

/** first · (first − step) · … over `count` terms. */
function productOfTerms(first: bigint, step: bigint, count: bigint): bigint {
  if (count <= 0n) return 1n;
  if (count <= 16n) {
    let result = 1n;
    for (let index = 0n, term = first; index < count; index++, term -= step) result *= term;
    return result;
  }
  const half = count / 2n;
  return productOfTerms(first, step, half) * productOfTerms(first - half * step, step, count - half);
}

/** A float approximation (may be ±Infinity or 0 for extreme magnitudes). */
export function toNumber(value: Rational): number {
  const numDigits = value.num.toString().replace('-', '').length;
  const denDigits = value.den.toString().length;
  if (numDigits < 300 && denDigits < 300) return Number(value.num) / Number(value.den);
  const shift = BigInt(Math.max(0, Math.min(numDigits, denDigits) - 20));
  const scale = 10n ** shift;
  return Number(value.num / scale) / Number(value.den / scale);
}

/** Approximate decimal exponent of |value| (log10), for comparing huge magnitudes. */
export function log10Magnitude(value: Rational): number {
  const digits = (n: bigint) => (n < 0n ? -n : n).toString().length;
  return digits(value.num) - digits(value.den);
}
