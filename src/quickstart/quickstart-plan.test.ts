import { describe, expect, it } from 'vitest';
import { arithToolPlan, arithTrainProblems } from '../tasks/index.ts';
import { embeddedPlan, pretrainedPlan, rlFolderName } from './quickstart-plan.ts';

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

describe('a pretrained model’s plan', () => {
  it('runs the embedded job’s stages: the same SFT mix, RL on the levels SFT covered thinly, compared on their held-out split', () => {
    const embedded = embeddedPlan('/project');
    const plan = pretrainedPlan({ type: 'pullable', name: 'smollm2-135m-instruct' }, '/out');
    expect(plan.sft.levels).toEqual(embedded.sft.levels);
    expect(plan.sft.levelWeights).toEqual(embedded.sft.levelWeights);
    expect(plan.rl?.config.levels).toEqual(embedded.rl?.config.levels);
    expect(plan.rlHeldOut).toEqual({ levels: embedded.rlHeldOut?.levels, count: plan.evaluation.count });
    // --count sizes both held-out evaluations; no RL, no split to compare on.
    const sized = pretrainedPlan({ type: 'pullable', name: 'smollm2-135m-instruct' }, '/out', { count: 50 });
    expect(sized.rlHeldOut?.count).toBe(50);
    const noRl = pretrainedPlan({ type: 'pullable', name: 'smollm2-135m-instruct' }, '/out', {
      rlMinutes: 0,
    });
    expect(noRl.rl).toBeNull();
  });
});

describe('the sandbox workers of the embedded job', () => {
  it('preload nothing: every program of the byte model’s training data imports standard-library modules only', () => {
    // A worker serves one trajectory and imports its preload first (SymPy, NumPy and SciPy take
    // half a second of a core); the byte model learns its programs from these plans, so what
    // they import is what its trajectories import. A plan that imports a heavy module would
    // make preloading it pay again: this test then says so.
    const plan = embeddedPlan('/project');
    expect(plan.sandboxPreload).toEqual([]);
    const imported = new Set<string>();
    for (const problem of arithTrainProblems({ levels: plan.sft.levels ?? [], count: 600, seed: 0 })) {
      const tool = arithToolPlan(problem.spec);
      for (const code of [tool.code, tool.firstAttempt?.code ?? '']) {
        for (const match of code.matchAll(/^\s*(?:import|from)\s+([A-Za-z_]\w*)/gm)) imported.add(match[1]!);
      }
    }
    expect([...imported].sort()).toEqual(['fractions', 'math']);
  });

  it('of a pretrained model keep the sandbox’s preload (its programs may use SymPy or NumPy)', () => {
    expect(
      pretrainedPlan({ type: 'pullable', name: 'smollm2-135m-instruct' }, '/out').sandboxPreload,
    ).toBeNull();
  });
});
