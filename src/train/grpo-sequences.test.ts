import { describe, expect, it } from 'vitest';
import type { GroupOutcome } from '../rollout/types.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import { grpoBatch, grpoSequence } from './grpo-sequences.ts';
import { rlMetrics, selfCorrected } from './rl-metrics.ts';

/** prompt [1,2] · model v0 [10,11] (code) · tool [20,21,22] · model v1 [12,13] (code) · tool [23] · model v1 [14] */
function trajectory(overrides: Partial<Trajectory> = {}): Trajectory {
  const model = (tokenIds: number[], logprobs: number[], policyVersion: number) => ({
    kind: 'model' as const,
    text: 'x',
    tokenIds,
    logprobs,
    policyVersion,
    finishReason: 'stop' as const,
    matchedStop: null,
    step: policyVersion,
    replica: null,
  });
  return {
    id: 't',
    problemId: 'p',
    sample: 0,
    dialect: 'tags',
    prompt: { text: 'p', tokenIds: [1, 2] },
    segments: [
      model([10, 11], [-0.1, -0.2], 0),
      { kind: 'tool', text: 'o', tokenIds: [20, 21, 22], toolCallIndex: 0 },
      model([12, 13], [-0.3, -0.4], 1),
      { kind: 'tool', text: 'o', tokenIds: [23], toolCallIndex: 1 },
      model([14], [-0.5], 1),
    ],
    toolCalls: [
      { code: 'a', outcome: { status: 'error', stdout: '', stderr: '', exception: 'E', ms: 1 }, ms: 1 },
      { code: 'b', outcome: { status: 'ok', stdout: '1', stderr: '', ms: 1 }, ms: 1 },
    ],
    answer: '1',
    finish: { reason: 'answer' },
    timing: { startedAt: '', finishedAt: '', engineMs: 0, toolMs: 0 },
    ...overrides,
  };
}

describe('grpoSequence', () => {
  it('masks the prompt and every interpreter token, and keeps each segment its own logprobs', () => {
    const sequence = grpoSequence(trajectory(), 0.5);
    if (typeof sequence === 'string') throw new Error(sequence);
    expect(sequence.inputIds).toEqual([1, 2, 10, 11, 20, 21, 22, 12, 13, 23, 14]);
    expect(sequence.lossMask).toEqual([0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1]);
    // The v0 segment's tokens carry the v0 logprobs, not the current policy's.
    expect(sequence.oldLogprobs).toEqual([0, 0, -0.1, -0.2, 0, 0, 0, -0.3, -0.4, 0, -0.5]);
    expect(sequence.advantage).toBe(0.5);
    expect(sequence.policyLag).toBeUndefined();
  });

  it("given the version the step trains from, carries each token's lag behind it (unknown: 255)", () => {
    const sequence = grpoSequence(trajectory(), 0.5, { policyVersion: 1 });
    if (typeof sequence === 'string') throw new Error(sequence);
    expect(sequence.policyLag).toEqual([0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0]);
    const base = trajectory();
    const unversioned = trajectory({
      segments: base.segments.map((segment, index) =>
        index === 4 && segment.kind === 'model' ? { ...segment, policyVersion: null } : segment,
      ),
    });
    const later = grpoSequence(unversioned, 0.5, { policyVersion: 3 });
    if (typeof later === 'string') throw new Error(later);
    expect(later.policyLag).toEqual([0, 0, 3, 3, 0, 0, 0, 2, 2, 0, 255]);
  });

  it('defect 8 (sequences with zero advantage leave the token-mean normaliser): they stay in the batch', () => {
    // DAPO's token-mean divides by every response token of the batch (verl: masked_mean over
    // the response mask), zero-advantage ones included; they also carry the KL term.
    const sequence = grpoSequence(trajectory(), 0);
    if (typeof sequence === 'string') throw new Error(sequence);
    expect(sequence.advantage).toBe(0);
    expect(sequence.lossMask.filter((bit) => bit === 1)).toHaveLength(5);
  });

  it('says why a trajectory is left out', () => {
    expect(grpoSequence(trajectory(), null)).toBe('advantage-missing');
    expect(grpoSequence(trajectory({ finish: { reason: 'max-tokens' } }), 1, { maskTruncated: true })).toBe(
      'truncated',
    );
    expect(grpoSequence(trajectory({ finish: { reason: 'max-tokens' } }), 1)).not.toBeTypeOf('string');
    expect(grpoSequence(trajectory(), 1, { maxTokens: 10 })).toBe('too-long');
    const voidTurn = trajectory({ finish: { reason: 'no-answer' }, answer: null });
    expect(grpoSequence(voidTurn, -1, { maskVoid: true })).toBe('void');
    expect(grpoSequence(voidTurn, -1)).not.toBeTypeOf('string');
  });
});

describe('grpoBatch and rlMetrics of a hand-made group', () => {
  const right = trajectory({ id: 'a' });
  const wrong = trajectory({ id: 'b', toolCalls: [], answer: '2' });
  const group: GroupOutcome = {
    step: 3,
    problem: { id: 'p', text: 'p', answer: '1' },
    trajectories: [right, wrong],
    rewards: [1.14, 0],
    correct: [true, false],
    advantages: [1, -1],
    kept: true,
    dropReason: null,
    oldestPolicyVersion: 0,
  };
  it('trains on the kept group with its advantages', () => {
    const batch = grpoBatch([group, { ...group, kept: false, dropReason: 'all-wrong' }]);
    expect(batch.trajectoryIds).toEqual(['a', 'b']);
    expect(batch.sequences.map((sequence) => sequence.advantage)).toEqual([1, -1]);
  });
  it('computes the step metrics from the group', () => {
    const metrics = rlMetrics({
      step: 3,
      policyVersion: 4,
      groups: [group],
      rollout: {
        step: 3,
        wallMs: 1,
        mode: 'async',
        router: 'single',
        trajectoriesFinished: 2,
        trajectoriesParked: 0,
        trajectoriesResumed: 0,
        groupsKept: 1,
        groupsDropped: 0,
        tailCut: false,
        groupsAbandoned: 0,
        trajectoriesAbandoned: 0,
        groupsBackfilled: 0,
        groupsCarried: 0,
        trajectoriesStale: 0,
        rewardsMissing: 0,
        truncationRate: 0,
        tokensGenerated: 10,
        toolCalls: 2,
        stage: 0,
        replicas: {},
      },
      train: null,
      trainedAtVersion: 2,
      timing: { rolloutMs: 5, trainMs: 0, weightSyncMs: 3, engineIdleMs: 4, trainerIdleMs: 6 },
    });
    expect(metrics.accuracy).toBe(0.5);
    expect(metrics.rewardMean).toBeCloseTo(0.57);
    expect(metrics.codeFrequency).toBe(0.5);
    expect(metrics.codeCallsPerTrajectory).toBe(1);
    expect(metrics.selfCorrectionRate).toBe(0.5);
    expect(metrics.responseTokensMean).toBe(5);
    expect(metrics.clipFraction).toBeNull();
    expect(selfCorrected(wrong)).toBe(false);
    // Two trajectories, each 2 tokens from v0 and 3 from v1, trained at v2.
    expect(metrics.stalenessHistogram).toEqual({ '2': 4, '1': 6 });
    expect(metrics.stalenessMax).toBe(2);
    expect(metrics.stalenessMean).toBeCloseTo(14 / 10);
    expect(metrics).toMatchObject({ rolloutMs: 5, weightSyncMs: 3, engineIdleMs: 4, trainerIdleMs: 6 });
  });
});
