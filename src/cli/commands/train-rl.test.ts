import { describe, expect, it } from 'vitest';
import type { StepStats } from '../../rollout/index.ts';
import type { RlMetrics } from '../../train/index.ts';
import { formatRlEvent } from './train-rl.ts';

const metrics = (kept: number, dropped: number) =>
  ({
    step: 0,
    policyVersion: 0,
    rewardMean: null,
    accuracy: null,
    codeFrequency: null,
    responseTokensMean: null,
    groupsKept: kept,
    groupsDropped: dropped,
    rolloutMs: 1000,
    trainMs: 0,
    weightSyncMs: 0,
    engineIdleMs: 0,
    trainerIdleMs: 0,
    stalenessMax: null,
    stalenessMean: null,
  }) as unknown as RlMetrics;
const rollout = (parked: number) => ({ trajectoriesParked: parked }) as unknown as StepStats;

describe('train rl: the step line', () => {
  it('says why a step trained nothing when every trajectory was parked for its next segment', () => {
    const parked = formatRlEvent({
      type: 'rl-step',
      metrics: metrics(0, 0),
      rollout: rollout(16),
      skipped: {},
    });
    expect(parked).toContain('nothing trained: no group finished in this step; its 16 trajectories parked');
    expect(parked).toContain('--partial-rollouts 1');
    const trained = formatRlEvent({
      type: 'rl-step',
      metrics: metrics(2, 1),
      rollout: rollout(3),
      skipped: {},
    });
    expect(trained).not.toContain('nothing trained');
  });

  it('shows a missing held-out evaluation as missing, with its reason', () => {
    const line = formatRlEvent({
      type: 'rl-eval',
      record: {
        step: 3,
        policyVersion: 4,
        accuracy: null,
        codeFrequency: null,
        toolCallsPerTrajectory: null,
        responseTokensMean: null,
        byLevel: null,
        problems: 0,
        missing: 'stopped by SIGINT',
        wallMs: 5,
      },
    });
    expect(line).toBe('eval after step 3: missing (stopped by SIGINT)\n');
  });
});
