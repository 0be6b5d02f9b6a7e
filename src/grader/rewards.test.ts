import { describe, expect, it } from 'vitest';
import { accuracyReward, compositeReward, compositeRewardConfigSchema, trajectoryReward } from './rewards.ts';

const toolCall = {
  code: 'print(1)',
  outcome: { status: 'ok' as const, stdout: '1\n', stderr: '', ms: 3 },
  ms: 5,
};

describe('rewards', () => {
  it('accuracy is 1 or 0', () => {
    expect(accuracyReward({ correct: true })).toBe(1);
    expect(accuracyReward({ correct: false })).toBe(0);
  });

  it('composite: R_acc + 1[R_acc=1]·min(R_max, α + β·N_code)', () => {
    const config = compositeRewardConfigSchema.parse({ alpha: 0.1, beta: 0.05, rMax: 0.3 });
    expect(compositeReward({ accuracy: 1, codeCount: 0 }, config)).toBeCloseTo(1.1);
    expect(compositeReward({ accuracy: 1, codeCount: 2 }, config)).toBeCloseTo(1.2);
    expect(compositeReward({ accuracy: 1, codeCount: 100 }, config)).toBeCloseTo(1.3);
    expect(compositeReward({ accuracy: 0, codeCount: 100 }, config)).toBe(0);
  });

  it('counts the trajectory tool calls as N_code and uses documented defaults', () => {
    const defaults = compositeRewardConfigSchema.parse({});
    expect(defaults).toEqual({ alpha: 0.1, beta: 0.02, rMax: 0.2 });
    expect(trajectoryReward({ correct: true }, { toolCalls: [toolCall, toolCall, toolCall] })).toBeCloseTo(
      1.16,
    );
    expect(trajectoryReward({ correct: false }, { toolCalls: [toolCall] })).toBe(0);
  });

  it('a grade without a verdict (grader unavailable) is missing, never 0', () => {
    expect(accuracyReward({ correct: null })).toBeNull();
    expect(trajectoryReward({ correct: null }, { toolCalls: [toolCall] })).toBeNull();
    expect(trajectoryReward({ correct: false }, { toolCalls: [] })).toBe(0);
  });

  it('rejects misspelt or negative settings', () => {
    expect(() => compositeRewardConfigSchema.parse({ alfa: 1 })).toThrow();
    expect(() => compositeRewardConfigSchema.parse({ beta: -1 })).toThrow();
  });
});
