import { describe, expect, it } from 'vitest';
import { arithToolPlan, arithTrainProblems } from '../tasks/index.ts';
import {
  embeddedPlan,
  expectedQuickstartTime,
  MEASURED_QUICKSTART_TIMES,
  pretrainedPlan,
  rlFolderName,
} from './quickstart-plan.ts';

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
    // --count sizes both held-out evaluations; --rl-minutes 0 runs no RL.
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

describe('the time a quickstart says to expect', () => {
  const smollm2 = { type: 'pullable', name: 'smollm2-135m-instruct' } as const;
  const per = MEASURED_QUICKSTART_TIMES.pretrained;

  it('is the embedded job’s measured time, and a pretrained plan’s budgets plus its measured parts', () => {
    expect(expectedQuickstartTime(embeddedPlan('/project')).minutes).toBe(
      MEASURED_QUICKSTART_TIMES.embeddedMinutes,
    );
    // The defaults' parts add up to the run they were measured from: 15 min 22 s.
    expect(expectedQuickstartTime(pretrainedPlan(smollm2, '/out')).minutes).toBeCloseTo(15.37, 1);
    const plan = pretrainedPlan(smollm2, '/out');
    const count = plan.evaluation.count ?? 0;
    // Baseline, SFT and RL on held-out arith; SFT and RL on the RL split; SFT's and RL's minutes.
    const evaluationSeconds =
      count * (per.baselineSecondsPerProblem + 2 * per.toolSecondsPerProblem) +
      2 * count * per.splitSecondsPerProblem;
    expect(expectedQuickstartTime(plan).minutes).toBeCloseTo(
      per.overheadMinutes + (plan.sft.maxMinutes ?? 0) + (plan.rl?.minutes ?? 0) + evaluationSeconds / 60,
      6,
    );
  });

  it('follows the flags: more problems, more minutes; no RL, no RL evaluations', () => {
    const base = expectedQuickstartTime(pretrainedPlan(smollm2, '/out', { count: 30 })).minutes;
    const more = expectedQuickstartTime(pretrainedPlan(smollm2, '/out', { count: 60 })).minutes;
    expect(more - base).toBeCloseTo(
      (30 *
        (per.baselineSecondsPerProblem + 2 * per.toolSecondsPerProblem + 2 * per.splitSecondsPerProblem)) /
        60,
      6,
    );
    const longer = expectedQuickstartTime(pretrainedPlan(smollm2, '/out', { trainMinutes: 10 })).minutes;
    expect(longer - base).toBeCloseTo(10 - 6, 6);
    const noRl = expectedQuickstartTime(pretrainedPlan(smollm2, '/out', { rlMinutes: 0 })).minutes;
    expect(base - noRl).toBeCloseTo(
      3 + (30 * (per.toolSecondsPerProblem + 2 * per.splitSecondsPerProblem)) / 60,
      6,
    );
  });
});
