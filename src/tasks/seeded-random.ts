/**
 * Deterministic randomness for task generation: a small seeded generator (sfc32, seeded from
 * SHA-256 of the seed's text) and helpers that draw integers and many-digit BigInts from any
 * `random()` in [0, 1). Not for cryptography; only for reproducible problem sets.
 */
import { createHash } from 'node:crypto';

/** A source of uniform numbers in [0, 1), as `Math.random`. */
export type Random = () => number;

/** A generator whose whole sequence is fixed by `seed` (same seed, same numbers, any platform). */
export function createSeededRandom(seed: number | string): Random {
  const digest = createHash('sha256').update(String(seed)).digest();
  let a = digest.readUInt32LE(0);
  let b = digest.readUInt32LE(4);
  let c = digest.readUInt32LE(8);
  let d = digest.readUInt32LE(12);
  const next = (): number => {
    // sfc32: a, b, c, d are 32-bit words; `>>> 0` keeps them unsigned.
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let index = 0; index < 12; index++) next(); // mix the seed state before use
  return next;
}

/** A uniform integer in [min, max] (both inclusive, both safe integers). */
export function randomInteger(random: Random, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

/** A uniform integer with exactly `digits` decimal digits (no leading zero). */
export function randomDigits(random: Random, digits: number): bigint {
  let text = String(randomInteger(random, 1, 9));
  for (let index = 1; index < digits; index++) text += String(randomInteger(random, 0, 9));
  return BigInt(text);
}

/** A uniform BigInt in [min, max]. */
export function randomBigInt(random: Random, min: bigint, max: bigint): bigint {
  const span = max - min + 1n;
  const digits = span.toString().length + 6; // extra digits make the modulo bias negligible
  let value = 0n;
  for (let index = 0; index < digits; index++) value = value * 10n + BigInt(randomInteger(random, 0, 9));
  return min + (value % span);
}

/** One element of a non-empty list, chosen uniformly. */
export function randomChoice<T>(random: Random, items: readonly T[]): T {
  const item = items[randomInteger(random, 0, items.length - 1)];
  if (item === undefined) throw new RangeError('randomChoice: empty list');
  return item;
}

/** Shuffles `items` in place (Fisher-Yates) and returns it; the order depends only on `random`. */
export function shuffleInPlace<T>(random: Random, items: T[]): T[] {
  for (let index = items.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [items[index], items[other]] = [items[other]!, items[index]!];
  }
  return items;
}
