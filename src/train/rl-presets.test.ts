import { describe, expect, it } from 'vitest';
import { rlConfigSchema } from './rl-config.ts';
import { RL_PRESETS } from './rl-presets.ts';

describe('train rl presets', () => {
  it('cpu: is smaller than the defaults and leaves the learning rate alone', () => {
    const defaults = rlConfigSchema.parse({ init: '/m' });
    expect(RL_PRESETS.cpu.batchSize * RL_PRESETS.cpu.groupSize).toBeLessThan(
      defaults.batchSize * defaults.groupSize,
    );
    expect(RL_PRESETS.cpu.evalProblems).toBeLessThan(defaults.evalProblems);
    expect(Object.keys(RL_PRESETS.cpu)).not.toContain('learningRate');
  });
});
