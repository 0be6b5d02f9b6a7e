/**
 * The simulator over a finite problem set (`problemSet`: problems recur epoch after epoch, their
 * solve rates rising) and pre-rollout skipping by history (`skipHistory`): the skipping run
 * skips problems and counts the kept groups it lost to wrong skips, the same run without it
 * skips none, both are reproducible, and skipping on a workload whose problems never recur is
 * refused. Small workload, virtual time.
 */
import { describe, expect, it } from 'vitest';
import { SIM_CONFIGURATIONS, simulate } from '../src/sim/index.ts';
import { parseWorkload } from '../src/sim/workload.ts';
import { raisedSolveRate, workloadPlans } from '../src/sim/workload-plans.ts';
import { smallSimWorkload } from './sim-fixtures.ts';

const workload = parseWorkload(
  {
    ...smallSimWorkload,
    name: 'small-epochs',
    difficulty: { solveRate: { alpha: 0.5, beta: 0.5 }, lengthSigma: 0.3, wrongLengthFactor: 1.5 },
    problemSet: { size: 10, solveRateGainPerEpoch: 0.3 },
  },
  'test',
);
const full = 'async+partial+prefix-aware+kv-budget+tail-cut';
const chosen = SIM_CONFIGURATIONS.filter((configuration) =>
  [full, `${full}+skip-history`].includes(configuration.name),
);

describe('simulate with epochs and --skip-history', () => {
  it('a recurring problem keeps its prompt and grows easier epoch after epoch', () => {
    const plans = workloadPlans(workload);
    expect(plans.problemText(13).length).toBe(plans.problemText(3).length);
    expect(raisedSolveRate(0.5, 0)).toBe(0.5);
    expect(raisedSolveRate(0.5, Math.log(3))).toBeCloseTo(0.75, 12);
    expect(raisedSolveRate(0, 5)).toBe(0);
    // Over many problems, the share of right answers rises from epoch 0 to epoch 4.
    const many = parseWorkload({ ...workload, problemSet: { size: 400, solveRateGainPerEpoch: 1 } }, 'test');
    const manyPlans = workloadPlans(many);
    const rightIn = (epoch: number) =>
      Array.from({ length: 400 }, (_, problem) => manyPlans.planFor(epoch * 400 + problem, 0)).filter(
        (plan) => plan.answer === '1',
      ).length;
    expect(rightIn(4)).toBeGreaterThan(rightIn(0) + 60);
  });

  it('skips problems by their history, counts the kept groups lost, and is reproducible', async () => {
    expect(chosen).toHaveLength(2);
    const report = await simulate({ workload, steps: 8, configurations: chosen });
    const [plain, skipping] = report.configurations;
    if (plain === undefined || skipping === undefined) throw new Error('no result');
    expect(plain.steps.every((step) => step.problemsSkipped === 0)).toBe(true);
    const skipped = skipping.steps.reduce((sum, step) => sum + step.problemsSkipped, 0);
    const lost = skipping.steps.reduce((sum, step) => sum + step.skippedWouldKeep, 0);
    expect(skipped).toBeGreaterThan(0);
    expect(lost).toBeLessThanOrEqual(skipped);
    // Nothing is skipped before a problem has been seen once (the first epoch: 10 draws).
    expect(skipping.steps[0]?.problemsSkipped).toBe(0);
    expect(skipping.intervals.problemsSkipped.median).toBe(skipping.skipping.problemsSkipped);
    expect(skipping.steps.reduce((sum, step) => sum + step.groupsKept, 0)).toBeGreaterThan(0);
    const again = await simulate({ workload, steps: 8, configurations: chosen.slice(1) });
    expect(again.configurations[0]?.steps.map((step) => step.problemsSkipped)).toEqual(
      skipping.steps.map((step) => step.problemsSkipped),
    );
    expect(again.configurations[0]?.batchSeconds).toBe(skipping.batchSeconds);
  }, 300_000);

  it('refuses to skip on a workload whose problems never recur', async () => {
    await expect(
      simulate({ workload: smallSimWorkload, steps: 1, configurations: chosen.slice(1) }),
    ).rejects.toThrow(/needs problems that recur \(problemSet\)/);
  });
});
