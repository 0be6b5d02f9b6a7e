import { describe, expect, it } from 'vitest';
import { factorial, parseDecimal, power, rational } from './rational.ts';

describe('rational', () => {
  it('parses integers, padded integers, decimals and scientific notation exactly', () => {
    expect(parseDecimal('025')).toEqual({ num: 25n, den: 1n });
    expect(parseDecimal('-0.50')).toEqual({ num: -1n, den: 2n });
    expect(parseDecimal('.35625')).toEqual({ num: 57n, den: 160n });
    expect(parseDecimal('1.5e-3')).toEqual({ num: 3n, den: 2000n });
    expect(parseDecimal('1e99999')).toBeNull();
  });

  it('guards powers and factorials instead of computing huge values', () => {
    expect(power(rational(10n)!, rational(10n)!)).toEqual({ num: 10n ** 10n, den: 1n });
    expect(power(rational(10n)!, rational(10n ** 10n)!)).toBeNull();
    expect(power(rational(-1n)!, rational(10n ** 30n + 1n)!)).toEqual({ num: -1n, den: 1n });
    expect(factorial(rational(5n)!)).toEqual({ num: 120n, den: 1n });
    expect(factorial(rational(9n)!, 2)).toEqual({ num: 945n, den: 1n });
    expect(factorial(rational(362_880n)!)).toBeNull();
  });

  it('computes large factorials and double factorials exactly (balanced product)', () => {
    const running = (n: bigint, step: bigint) => {
      let result = 1n;
      for (let term = n; term > 1n; term -= step) result *= term;
      return result;
    };
    for (const n of [0n, 1n, 2n, 3n, 16n, 17n, 33n, 34n, 100n, 2004n]) {
      expect(factorial(rational(n)!)?.num, `${n}!`).toBe(running(n, 1n));
      expect(factorial(rational(n)!, 2)?.num, `${n}!!`).toBe(running(n, 2n));
    }
  });
});
