import { describe, expect, it } from 'vitest';
import { embeddedPlan, rlFolderName } from './quickstart-plan.ts';

describe('the RL stage of another seed', () => {
  it('keeps the main job’s RL model and trains its own folder from the same SFT models', () => {
    const main = embeddedPlan('/project');
    const other = embeddedPlan('/project', { rlSeed: 2 });
    expect(main.rl?.config.seed).toBe(0);
    expect(other.rl?.config.seed).toBe(2);
    expect(rlFolderName(main)).toBe('arith-tool-rl');
    expect(rlFolderName(other)).toBe('arith-tool-rl-seed-2');
    // Everything else of the plan is the main job's: same SFT arms, budget and held-out split.
    expect({ ...other, rl: null }).toEqual({ ...main, rl: null });
    expect({ ...other.rl?.config, seed: 0 }).toEqual(main.rl?.config);
  });
});

describe('the embedded plan', () => {
  it('trains SFT on levels 1–4 in full and the RL levels thinly, and RL on the RL levels only', () => {
    const plan = embeddedPlan('/project');
    expect(plan.sft.levels).toEqual([1, 2, 3, 4, 5]);
    const weights = plan.sft.levelWeights ?? [];
    expect(weights).toHaveLength(5);
    // Every RL level weighs less in the SFT data than any of levels 1–4.
    expect(Math.max(...weights.slice(4))).toBeLessThan(Math.min(...weights.slice(0, 4)));
    expect(plan.rl?.config.levels).toEqual([5]);
    expect(plan.rlHeldOut?.levels).toEqual([5]);
  });
});
