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
