import { describe, expect, it } from 'vitest';
import { resolveRlConfig } from './rl-config.ts';
import { rolloutCorrectionOptions } from './rollout-correction.ts';

describe('--rollout-correction', () => {
  it('defaults to the decoupled objective with truncated importance sampling at 2', () => {
    const config = resolveRlConfig({ init: '/m' });
    expect(config.proximal).toBe('recompute');
    expect(rolloutCorrectionOptions(config)).toEqual({
      offPolicyCap: 2,
      offPolicyMode: 'truncate',
      offPolicyFloor: 0,
    });
  });

  it('mis masks outside [lower, upper], the lower threshold 1/upper unless given', () => {
    const config = resolveRlConfig({ init: '/m', rolloutCorrection: 'mis', rolloutIsThreshold: 4 });
    expect(rolloutCorrectionOptions(config)).toEqual({
      offPolicyCap: 4,
      offPolicyMode: 'mask',
      offPolicyFloor: 0.25,
    });
    const given = resolveRlConfig({
      init: '/m',
      rolloutCorrection: 'mis',
      rolloutIsThreshold: 4,
      rolloutIsThresholdLower: 0.5,
    });
    expect(rolloutCorrectionOptions(given).offPolicyFloor).toBe(0.5);
  });

  it('refuses a threshold below 1 and the old off-policy fields by name', () => {
    expect(() => resolveRlConfig({ init: '/m', rolloutIsThreshold: 0.5 })).toThrow(/rolloutIsThreshold/);
    expect(() => resolveRlConfig({ init: '/m', offPolicyCap: 2 })).toThrow(/offPolicyCap|Unrecognized/);
  });
});
