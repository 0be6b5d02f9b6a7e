import { describe, expect, it } from 'vitest';
import { pairedDifference } from '../eval/paired-difference.ts';
import { describeEffect } from './effect-sentence.ts';

/** Grades for ids p0, p1, … from a string of 1 (right) and 0 (wrong). */
function grades(pattern: string): Map<string, boolean> {
  return new Map([...pattern].map((mark, index) => [`p${index}`, mark === '1']));
}

const names = { comparison: 'Tool SFT against the base model', change: 'SFT' };

describe('describeEffect', () => {
  it('says the paired difference in the RL line’s format and whether a gain was measured', () => {
    const gain = describeEffect(pairedDifference(grades('0'.repeat(10)), grades('1'.repeat(10))), names);
    expect(gain).toBe(
      'Tool SFT against the base model: +100.0 points (95% interval +56.7 to +100.0; 10 gained, 0 lost of 10; ' +
        'McNemar p = 0.00); a gain measured (McNemar p < 0.05).',
    );
    expect(describeEffect(pairedDifference(grades('1'.repeat(10)), grades('0'.repeat(10))), names)).toContain(
      'a loss measured (McNemar p < 0.05).',
    );
    expect(describeEffect(pairedDifference(grades('1100'), grades('1010')), names)).toContain(
      'no gain measured: the difference is within the noise.',
    );
    expect(describeEffect(pairedDifference(grades('1100'), grades('1100')), names)).toContain(
      'no gain measured: SFT changed no answer.',
    );
  });
});
