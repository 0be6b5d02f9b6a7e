import { describe, expect, it } from 'vitest';
import { rlFolderName } from '../../quickstart/index.ts';
import { quickstartPlanOf } from './quickstart.ts';

describe('quickstart --rl-seed', () => {
  it('reaches the plan: the RL stage of that seed, in its own folder', () => {
    const { plan } = quickstartPlanOf({ rlSeed: 3 }, '/project');
    expect(plan.rl?.config.seed).toBe(3);
    expect(rlFolderName(plan)).toBe('arith-tool-rl-seed-3');
    expect(rlFolderName(quickstartPlanOf({}, '/project').plan)).toBe('arith-tool-rl');
  });
});
