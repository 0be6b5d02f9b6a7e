import { describe, expect, it } from 'vitest';
import { SIM_CONFIGURATIONS } from './sim-configurations.ts';
import { simulate } from './simulate.ts';
import { parseWorkload } from './workload.ts';

// 6 prompts × 4 samples on 2 replicas, half the answers right: groups often start all wrong.
const workload = parseWorkload(
  {
    name: 'small',
    stepPrompts: 6,
    groupSize: 4,
    promptTokens: { constant: 200 },
    responseTokens: { lognormal: { mu: 7.5, sigma: 1.2 }, min: 100, max: 12_000 },
    toolCalls: { mean: 3, max: 12 },
    toolOutputTokens: { constant: 40 },
    toolLatencyMs: { lognormal: { mu: 6.5, sigma: 0.8 }, min: 50, max: 20_000 },
    replicas: 2,
    costModel: {
      decodeBaseMs: 6.1,
      decodePerSequenceMs: 0.033,
      decodePerContextTokenMs: 0.000055,
      prefillPerTokenMs: 0.033,
    },
    kvCapacityTokens: 60_000,
    maxRunningRequests: 32,
    sandboxWorkers: 8,
    budgets: { maxTokens: 12_000, maxToolCalls: 12, partialRollouts: 3 },
    seed: 7,
  },
  'test',
);

const FULL = 'async+partial+prefix-aware+kv-budget+tail-cut';

describe('simulate with early abandonment', () => {
  it('counts the abandoned groups and those of them that would have been kept, predicting the others right', async () => {
    const configurations = SIM_CONFIGURATIONS.filter((configuration) =>
      [FULL, `${FULL}+abandon-wrong-4`].includes(configuration.name),
    );
    const report = await simulate({ workload, steps: 6, configurations });
    const [full, abandoning] = report.configurations;
    expect(full?.abandonment.groupsAbandoned).toBe(0);
    const audit = abandoning?.abandonment;
    // 4 of 8 scaled to a group of 4: two wrong answers first abandon the other two.
    expect(audit?.groupsAbandoned).toBeGreaterThan(0);
    expect(audit?.abandonedAllWrong).toBe(audit?.groupsAbandoned);
    expect(audit?.keptGroupsLost).toBeLessThanOrEqual(audit?.groupsAbandoned ?? 0);
    // The plans' verdicts match every group decided the normal way.
    expect(audit?.checked).toBeGreaterThan(0);
    expect(audit?.mispredicted).toBe(0);
    const counted = abandoning?.steps.slice(1) ?? [];
    expect(counted.reduce((sum, step) => sum + step.groupsAbandoned, 0) / counted.length).toBeCloseTo(
      audit?.groupsAbandoned ?? -1,
      9,
    );
    // Nothing beats its bounds; the work decided includes what the abandoned members ran.
    for (const configuration of report.configurations) {
      expect(configuration.batchSeconds).toBeGreaterThanOrEqual(configuration.boundDecidedBatchSeconds);
      expect(configuration.boundDecidedBatchSeconds).toBeGreaterThanOrEqual(configuration.boundBatchSeconds);
    }
  });
});
