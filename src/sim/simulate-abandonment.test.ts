import { describe, expect, it } from 'vitest';
import { smallSimWorkload } from '../../test/sim-fixtures.ts';
import { SIM_CONFIGURATIONS } from './sim-configurations.ts';
import { simulate } from './simulate.ts';

// 6 prompts × 4 samples on 2 replicas, half the answers right: groups often start all wrong.
const workload = smallSimWorkload;

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
