import { describe, expect, it } from 'vitest';
import { parseWorkload, SIM_CONFIGURATIONS, simulate, simulationJson } from '../src/sim/index.ts';
import { smallSimWorkload } from './sim-fixtures.ts';

const workload = smallSimWorkload;
const ladder = SIM_CONFIGURATIONS.filter((configuration) =>
  ['static-sync', 'async', 'async+partial+prefix-aware'].includes(configuration.name),
);

describe('agentmath simulate (the real scheduler and router in virtual time)', () => {
  it('reports every configuration with the bound, reproducibly, and the ladder holds on a long-tailed workload', async () => {
    const first = await simulate({ workload, steps: 6, configurations: ladder });
    const again = await simulate({ workload, steps: 6, configurations: ladder.slice(2) });
    const byName = Object.fromEntries(
      first.configurations.map((configuration) => [configuration.name, configuration]),
    );
    expect(Object.keys(byName)).toEqual(['static-sync', 'async', 'async+partial+prefix-aware']);
    expect(byName['static-sync']?.speedup).toBe(1);
    expect(byName['static-sync']?.batchSpeedup).toBe(1);
    const sync = byName['static-sync']?.batchSeconds ?? 0;
    const asyncStep = byName.async?.batchSeconds ?? 0;
    const full = byName['async+partial+prefix-aware']?.batchSeconds ?? 0;
    expect(asyncStep).toBeLessThan(sync);
    expect(full).toBeLessThan(asyncStep);
    // Nothing beats the bound.
    for (const configuration of first.configurations)
      expect(configuration.batchSeconds).toBeGreaterThanOrEqual(first.bound.stepSeconds);
    for (const configuration of first.configurations) {
      expect(configuration.steps).toHaveLength(6);
      expect(configuration.busyFraction).toBeGreaterThan(0);
      expect(configuration.busyFraction).toBeLessThanOrEqual(1);
      // Re-prefill is told apart by cause, all of it; occupancy is a fraction per tenth of a step.
      const causes = configuration.reprefillByCause;
      expect(causes.moved + causes.evicted + causes.weightUpdate + causes.preempted).toBeCloseTo(
        configuration.reprefillTokens,
        6,
      );
      for (const step of configuration.steps) {
        expect(step.kvOccupancyByTenth).toHaveLength(10);
        for (const tenth of step.kvOccupancyByTenth) expect(tenth).toBeGreaterThanOrEqual(0);
        for (const tenth of step.kvOccupancyByTenth) expect(tenth).toBeLessThanOrEqual(1);
      }
      expect(configuration.kvOccupancy.body).toBeGreaterThan(0);
      expect(configuration.tokensPerSecond).toBeGreaterThan(0);
    }
    // Same inputs, same figures.
    expect(again.configurations[0]?.stepSeconds).toBe(byName['async+partial+prefix-aware']?.stepSeconds);
    const json = simulationJson(first) as {
      bound: { stepSeconds: number };
      configurations: Record<string, unknown>[];
    };
    expect(json.bound.stepSeconds).toBe(first.bound.stepSeconds);
    expect(Object.keys(json.configurations[0] ?? {})).toEqual(
      expect.arrayContaining([
        'name',
        'stepSeconds',
        'speedup',
        'tokensPerSecond',
        'reprefillTokens',
        'preemptions',
        'busyFraction',
      ]),
    );
  }, 300_000);

  it('the full system (KV budget + tail cut) ends steps at their tail, keeps groups, and never beats the bound', async () => {
    const full = SIM_CONFIGURATIONS.filter(
      (configuration) => configuration.name === 'async+partial+prefix-aware+kv-budget+tail-cut',
    );
    expect(full).toHaveLength(1);
    const report = await simulate({ workload, steps: 6, configurations: full });
    const [result] = report.configurations;
    if (result === undefined) throw new Error('no result');
    expect(result.steps.some((step) => step.tailCut)).toBe(true);
    expect(result.steps.reduce((sum, step) => sum + step.groupsKept, 0)).toBeGreaterThan(0);
    expect(result.batchSeconds).toBeGreaterThanOrEqual(report.bound.stepSeconds);
  }, 300_000);

  it('runs the full system with the engine options (chunked prefill, a KV time-to-live) to the end, never beating the bound', async () => {
    const chosen = SIM_CONFIGURATIONS.filter((configuration) =>
      [
        'async+partial+prefix-aware+kv-budget+tail-cut+chunked-prefill',
        'async+partial+prefix-aware+kv-budget+tail-cut+kv-ttl-2s',
      ].includes(configuration.name),
    );
    expect(chosen).toHaveLength(2);
    // A chunk smaller than the workload's contexts, so long prompts are split.
    const options = chosen.map((configuration) =>
      configuration.chunkedPrefillTokens === undefined
        ? configuration
        : { ...configuration, chunkedPrefillTokens: 512 },
    );
    const report = await simulate({ workload, steps: 4, configurations: options });
    for (const result of report.configurations) {
      expect(result.steps).toHaveLength(4);
      expect(result.steps.reduce((sum, step) => sum + step.groupsKept, 0)).toBeGreaterThan(0);
      expect(result.batchSeconds).toBeGreaterThanOrEqual(report.bound.stepSeconds);
    }
  }, 300_000);

  it('leads with time per kept batch, bounds the groups each configuration kept, and adds training and the weight sync to a step', async () => {
    const trained = parseWorkload(
      {
        ...workload,
        difficulty: { solveRate: { alpha: 0.5, beta: 0.5 }, lengthSigma: 0.5, wrongLengthFactor: 1.5 },
        training: { msPerToken: 0.05, weightSyncMs: 3000 },
      },
      'test',
    );
    const chosen = SIM_CONFIGURATIONS.filter((configuration) =>
      ['static-sync', 'static-sync-sticky', 'async+prefix-aware', 'async+partial+prefix-aware'].includes(
        configuration.name,
      ),
    );
    expect(chosen).toHaveLength(4);
    const report = await simulate({ workload: trained, steps: 5, seeds: 2, configurations: chosen });
    expect(report.seeds).toEqual([7, 8]);
    for (const configuration of report.configurations) {
      const { stepParts, steps } = configuration;
      expect(stepParts.weightSyncSeconds).toBe(3);
      expect(stepParts.trainSeconds).toBeGreaterThan(0);
      // Sync: rollout, training and weight sync one after another; async: training overlaps.
      for (const step of steps) {
        const expected = configuration.trainingOverlapped
          ? Math.max(step.rolloutSeconds, step.trainSeconds) + step.weightSyncSeconds
          : step.rolloutSeconds + step.trainSeconds + step.weightSyncSeconds;
        expect(step.seconds).toBeCloseTo(expected, 9);
      }
      expect(configuration.trainingOverlapped).toBe(!configuration.name.startsWith('static-sync'));
      // The bound is for the groups this configuration kept, and nothing beats it.
      expect(configuration.boundBatchSeconds).toBeGreaterThan(0);
      for (const seed of configuration.seeds)
        expect(seed.batchOverBound).toBeCloseTo(seed.batchSeconds / seed.boundBatchSeconds, 9);
      expect(configuration.batchOverBound).toBeGreaterThanOrEqual(1);
      // Counting the dropped groups' work raises the bound, and the schedule still does not beat it.
      expect(configuration.boundDecidedBatchSeconds).toBeGreaterThanOrEqual(configuration.boundBatchSeconds);
      expect(configuration.batchSeconds).toBeGreaterThanOrEqual(configuration.boundDecidedBatchSeconds);
      // Every figure has its interval over the seeds, the median in between.
      expect(configuration.seeds).toHaveLength(2);
      const interval = configuration.intervals.batchSeconds;
      expect(interval.min).toBeLessThanOrEqual(interval.median);
      expect(interval.median).toBeLessThanOrEqual(interval.max);
      expect(configuration.batchSeconds).toBe(interval.median);
    }
    // The static baseline keeps a full batch each step, paying extra rounds for dropped groups.
    const sync = report.configurations.find((configuration) => configuration.name === 'static-sync');
    expect(sync?.groupsKept).toBe(trained.stepPrompts);
    expect(
      sync?.steps.some((step) => step.trajectoriesFinished > trained.stepPrompts * trained.groupSize),
    ).toBe(true);
    const json = simulationJson(report) as { configurations: Record<string, unknown>[] };
    expect(Object.keys(json.configurations[0] ?? {}).slice(0, 9)).toEqual([
      'name',
      'batchSeconds',
      'batchSpeedup',
      'boundBatchSeconds',
      'batchOverBound',
      'boundDecidedBatchSeconds',
      'stepSeconds',
      'speedup',
      'groupsKept',
    ]);
    expect(json.configurations[0]?.stepParts).toEqual(
      expect.objectContaining({
        rolloutSeconds: expect.any(Number),
        trainSeconds: expect.any(Number),
        weightSyncSeconds: 3,
      }),
    );
  }, 300_000);
});
