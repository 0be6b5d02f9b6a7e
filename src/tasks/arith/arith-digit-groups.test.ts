import { describe, expect, it } from 'vitest';
import { groupDigits } from './arith-digit-groups.ts';

describe('groupDigits', () => {
  it('splits groups of three from the right, sign kept in front', () => {
    expect(groupDigits(7n, ' ')).toBe('7');
    expect(groupDigits(999n, ' ')).toBe('999');
    expect(groupDigits(1000n, ' ')).toBe('1 000');
    expect(groupDigits(1234567n, ' ')).toBe('1 234 567');
    expect(groupDigits(-12345n, '_')).toBe('-12_345');
    expect(groupDigits(0n, '_')).toBe('0');
  });

  it('removing the separator gives the number back', () => {
    for (const value of [1n, -10n, 100200n, -9876543210123n, 10n ** 30n]) {
      expect(BigInt(groupDigits(value, ' ').replaceAll(' ', ''))).toBe(value);
    }
  });
});
