/**
 * Draws the operands of one problem of a given kind and level from `random`. Levels 1..4:
 * the number of digits (and, for powers, the exponent) grows with the level. Level 0 (asked
 * for explicitly, never in the defaults) has small operands a small model can learn to
 * compute in text, so text-only training has a signal too. Level 5, the spaced level (asked
 * for explicitly), has level 3's operands written in digit groups (`12 345`): a program that
 * copies the numbers as written is a SyntaxError, so a model has a failed first call to
 * correct. Every table below (row = level) is the whole difficulty definition of levels 0..4.
 */
import { type Random, randomDigits, randomInteger } from '../seeded-random.ts';
import { type ArithKind, type ArithSpec, statedNumbers } from './arith-spec.ts';

export const ARITH_LEVELS: readonly number[] = [1, 2, 3, 4];
/** The spaced level: numbers in digit groups, so the first, literal-copy program fails. */
export const ARITH_SPACED_LEVEL = 5;
/** Every level a problem can be drawn at, the easy level 0 and the spaced level 5 included. */
export const ARITH_ALL_LEVELS: readonly number[] = [0, 1, 2, 3, 4, ARITH_SPACED_LEVEL];
/** The highest level (what command-line and config validation accept). */
export const ARITH_MAX_LEVEL = ARITH_SPACED_LEVEL;
/** The level whose operand tables the spaced level draws from. */
const SPACED_OPERANDS_LEVEL = 3;
/** Spaced problems have at least one number this large, so a space appears in the statement. */
const SPACED_MIN_NUMBER = 1000n;
/** Spaced power-digit-sum bases (level 3's 2..999 would never be grouped). */
const SPACED_DIGIT_SUM_BASE: Range = [1000, 9999];

type Range = readonly [number, number];

/** Per level: digits of the two factors. */
const PRODUCT_DIGITS: readonly (readonly [number, number])[] = [
  [2, 1],
  [3, 2],
  [4, 3],
  [5, 5],
  [7, 6],
];
/** Per level: number of terms, and digits of each term. */
const SUM_SHAPE: readonly { terms: number; digits: Range }[] = [
  { terms: 2, digits: [1, 2] },
  { terms: 3, digits: [3, 4] },
  { terms: 3, digits: [5, 6] },
  { terms: 4, digits: [7, 9] },
  { terms: 5, digits: [10, 12] },
];
/** Per level: base range, exponent range, modulus range. */
const MOD_POWER_SHAPE: readonly { base: Range; exponent: Range; modulus: Range }[] = [
  { base: [2, 9], exponent: [2, 9], modulus: [3, 20] },
  { base: [2, 20], exponent: [10, 99], modulus: [10, 999] },
  { base: [2, 99], exponent: [100, 999], modulus: [100, 9999] },
  { base: [10, 999], exponent: [200, 999], modulus: [1000, 99999] },
  { base: [100, 9999], exponent: [1000, 4999], modulus: [10000, 999999] },
];
/** Per level: how many digits the power whose digits are summed has (base 2..999). */
const DIGIT_SUM_DIGITS: readonly Range[] = [
  [2, 5],
  [8, 15],
  [16, 25],
  [26, 40],
  [41, 60],
];
/** Per level: digits of the common factor and of the two cofactors (gcd, lcm). */
const DIVISOR_SHAPE: readonly { common: Range; cofactor: Range }[] = [
  { common: [1, 1], cofactor: [1, 2] },
  { common: [1, 1], cofactor: [2, 3] },
  { common: [1, 2], cofactor: [3, 4] },
  { common: [2, 3], cofactor: [4, 6] },
  { common: [3, 4], cofactor: [6, 7] },
];
/** Per level: digits of a, of the solution x, of b; whether negatives appear. */
const LINEAR_SHAPE: readonly { a: Range; x: Range; b: Range; negative: boolean }[] = [
  { a: [1, 1], x: [1, 2], b: [1, 2], negative: false },
  { a: [1, 2], x: [2, 2], b: [1, 2], negative: false },
  { a: [2, 2], x: [3, 3], b: [3, 4], negative: true },
  { a: [3, 3], x: [4, 4], b: [5, 5], negative: true },
  { a: [4, 4], x: [5, 6], b: [7, 7], negative: true },
];
/** Per level: largest coefficient and largest |x|, |y| of a 2x2 system. */
const SYSTEM_SHAPE: readonly { coefficient: number; unknown: number }[] = [
  { coefficient: 5, unknown: 9 },
  { coefficient: 9, unknown: 9 },
  { coefficient: 20, unknown: 50 },
  { coefficient: 99, unknown: 999 },
  { coefficient: 999, unknown: 9999 },
];

function atLevel<T>(table: readonly T[], level: number): T {
  const row = Number.isInteger(level) ? table[level] : undefined;
  if (row === undefined) throw new RangeError(`arith level ${level} is outside 0..${ARITH_MAX_LEVEL}`);
  return row;
}

const digitsIn = (random: Random, range: Range): bigint =>
  randomDigits(random, randomInteger(random, ...range));
const sign = (random: Random, allowNegative: boolean): bigint => (allowNegative && random() < 0.5 ? -1n : 1n);
const nonZeroIn = (random: Random, limit: number): bigint => {
  const value = BigInt(randomInteger(random, 1, limit));
  return random() < 0.5 ? -value : value;
};

/** One problem's operands; its answer is an integer by construction. */
export function generateArithSpec(kind: ArithKind, level: number, random: Random): ArithSpec {
  if (level === ARITH_SPACED_LEVEL) return spacedSpec(kind, random);
  return plainSpec(kind, level, random);
}

/** Level 3's operands with one number of four digits or more, written in digit groups. */
function spacedSpec(kind: ArithKind, random: Random): ArithSpec {
  for (;;) {
    const spec = plainSpec(kind, SPACED_OPERANDS_LEVEL, random, SPACED_DIGIT_SUM_BASE);
    const grouped = statedNumbers(spec).some((value) => (value < 0n ? -value : value) >= SPACED_MIN_NUMBER);
    if (grouped) return { ...spec, notation: 'spaced' };
  }
}

function plainSpec(
  kind: ArithKind,
  level: number,
  random: Random,
  digitSumBase: Range = [2, 999],
): ArithSpec {
  switch (kind) {
    case 'product': {
      const [first, second] = atLevel(PRODUCT_DIGITS, level);
      const a = randomDigits(random, first);
      const b = randomDigits(random, second);
      return random() < 0.5 ? { kind, a, b } : { kind, a: b, b: a };
    }
    case 'sum': {
      const shape = atLevel(SUM_SHAPE, level);
      return { kind, terms: Array.from({ length: shape.terms }, () => digitsIn(random, shape.digits)) };
    }
    case 'mod-power': {
      const shape = atLevel(MOD_POWER_SHAPE, level);
      return {
        kind,
        base: BigInt(randomInteger(random, ...shape.base)),
        exponent: BigInt(randomInteger(random, ...shape.exponent)),
        modulus: BigInt(randomInteger(random, ...shape.modulus)),
      };
    }
    case 'power-digit-sum': {
      const [fewest, most] = atLevel(DIGIT_SUM_DIGITS, level);
      for (;;) {
        const base = randomInteger(random, ...digitSumBase);
        // digits of base^e = floor(e * log10(base)) + 1; keep the exponents that land in range.
        const low = Math.ceil((fewest - 1) / Math.log10(base));
        const high = Math.floor(most / Math.log10(base));
        const exponent = BigInt(randomInteger(random, Math.max(low, 2), high));
        const digits = (BigInt(base) ** exponent).toString().length;
        if (exponent >= 2n && digits >= fewest && digits <= most)
          return { kind, base: BigInt(base), exponent };
      }
    }
    case 'gcd':
    case 'lcm': {
      const shape = atLevel(DIVISOR_SHAPE, level);
      const common = digitsIn(random, shape.common);
      return {
        kind,
        a: common * digitsIn(random, shape.cofactor),
        b: common * digitsIn(random, shape.cofactor),
      };
    }
    case 'linear-equation': {
      const shape = atLevel(LINEAR_SHAPE, level);
      const drawn = digitsIn(random, shape.a);
      const a = drawn === 1n ? 2n : drawn; // `1x` would make the problem trivial
      const x = sign(random, shape.negative) * digitsIn(random, shape.x);
      const b = sign(random, shape.negative) * digitsIn(random, shape.b);
      return { kind, a, b, c: a * x + b };
    }
    case 'linear-system': {
      const shape = atLevel(SYSTEM_SHAPE, level);
      const x = nonZeroIn(random, shape.unknown);
      const y = nonZeroIn(random, shape.unknown);
      for (;;) {
        const a1 = BigInt(randomInteger(random, 1, shape.coefficient));
        const b1 = nonZeroIn(random, shape.coefficient);
        const a2 = BigInt(randomInteger(random, 1, shape.coefficient));
        const b2 = nonZeroIn(random, shape.coefficient);
        if (a1 * b2 - b1 * a2 === 0n) continue; // singular: draw again
        return { kind, a1, b1, c1: a1 * x + b1 * y, a2, b2, c2: a2 * x + b2 * y };
      }
    }
  }
}
