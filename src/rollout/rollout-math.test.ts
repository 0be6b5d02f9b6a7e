import { describe, expect, it } from 'vitest';
import { compositeRewardConfigSchema } from '../grader/rewards.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import { isTruncated, nextStageIndex, segmentLimits, truncationRate } from './budget-stages.ts';
import { groupAdvantages } from './group-advantages.ts';
import { groupDropReason } from './group-filter.ts';
import { PAPER_BUDGET_STAGES } from './rollout-config.ts';
import { isStale, oldestPolicyVersion } from './staleness.ts';
import { rewardOrMissing } from './trajectory-reward.ts';

const rewardConfig = compositeRewardConfigSchema.parse({});
const calls = (count: number) =>
  Array.from({ length: count }, () => ({
    code: '1',
    outcome: { status: 'killed' as const, reason: 'x' },
    ms: 0,
  }));
const modelSegment = (policyVersion: number | null) => ({
  kind: 'model' as const,
  text: '',
  tokenIds: [],
  logprobs: [],
  policyVersion,
  finishReason: 'stop' as const,
  matchedStop: null,
  step: 0,
  replica: null,
});
const finished = (reason: NonNullable<Trajectory['finish']>['reason']) => ({ finish: { reason } });

describe('rewardOrMissing', () => {
  it('is the composite reward: 1 + min(R_max, α + β·N_code) when correct, 0 when wrong', () => {
    expect(rewardOrMissing(true, { toolCalls: calls(2) }, rewardConfig)).toBeCloseTo(1 + 0.1 + 0.04);
    expect(rewardOrMissing(true, { toolCalls: calls(50) }, rewardConfig)).toBeCloseTo(1.2);
    expect(rewardOrMissing(false, { toolCalls: calls(5) }, rewardConfig)).toBe(0);
  });
  it('defect 9 (no --reward accuracy): the accuracy reward is R_acc alone, whatever the code calls', () => {
    expect(rewardOrMissing(true, { toolCalls: calls(3) }, rewardConfig, 'accuracy')).toBe(1);
    expect(rewardOrMissing(false, { toolCalls: calls(3) }, rewardConfig, 'accuracy')).toBe(0);
    expect(rewardOrMissing(null, { toolCalls: calls(3) }, rewardConfig, 'accuracy')).toBeNull();
  });
  it('is null (missing) when the grade could not run, never 0', () => {
    expect(rewardOrMissing(null, { toolCalls: calls(1) }, rewardConfig)).toBeNull();
  });
});

describe('groupAdvantages', () => {
  it('normalises by mean and population std', () => {
    const advantages = groupAdvantages([1, 0, 0, 1]);
    expect(advantages.map((value) => Number(value?.toFixed(4)))).toEqual([1, -1, -1, 1]);
  });
  it('mean-only (Dr. GRPO) does not divide by std', () => {
    expect(groupAdvantages([1, 0, 0, 0], { scale: 'mean-only' })).toEqual([0.75, -0.25, -0.25, -0.25]);
  });
  it('leaves missing rewards out of mean and std and gives them null', () => {
    const advantages = groupAdvantages([1, null, 0], { scale: 'mean-only' });
    expect(advantages).toEqual([0.5, null, -0.5]);
  });
  it('is zero for equal rewards and all null when every reward is missing', () => {
    expect(groupAdvantages([1, 1, 1])).toEqual([0, 0, 0]);
    expect(groupAdvantages([null, null])).toEqual([null, null]);
  });
});

describe('groupDropReason', () => {
  it('keeps a group with right and wrong answers', () => {
    expect(groupDropReason({ correct: [true, false], stale: false })).toBeNull();
  });
  it('defect 1 (the group filter compares composite rewards, not correctness): an all-correct group whose members differ in code calls is dropped', () => {
    // Rewards 1.12 and 1.14 (one and two code calls): today's filter kept this group.
    expect(groupDropReason({ correct: [true, true], stale: false })).toBe('all-correct');
  });
  it('drops all-correct and all-wrong groups', () => {
    expect(groupDropReason({ correct: [true, true], stale: false })).toBe('all-correct');
    expect(groupDropReason({ correct: [false, false, false], stale: false })).toBe('all-wrong');
  });
  it('ignores missing grades when deciding, and names a group with none', () => {
    expect(groupDropReason({ correct: [false, null, false], stale: false })).toBe('all-wrong');
    expect(groupDropReason({ correct: [true, null, true], stale: false })).toBe('all-correct');
    expect(groupDropReason({ correct: [null, null], stale: false })).toBe('rewards-missing');
  });
  it('drops a stale group first', () => {
    expect(groupDropReason({ correct: [true, false], stale: true })).toBe('stale');
  });
});

describe('budget stages', () => {
  it('moves to the next stage only when truncation exceeds the threshold, and stays at the last', () => {
    expect(nextStageIndex({ stage: 0, truncationRate: 0.1, threshold: 0.1, stageCount: 3 })).toBe(0);
    expect(nextStageIndex({ stage: 0, truncationRate: 0.11, threshold: 0.1, stageCount: 3 })).toBe(1);
    expect(nextStageIndex({ stage: 2, truncationRate: 0.5, threshold: 0.1, stageCount: 3 })).toBe(2);
  });
  it('L_seg = maxTokens / N and T_seg = maxToolCalls / N for the paper stages', () => {
    expect(PAPER_BUDGET_STAGES.map((stage) => segmentLimits(stage))).toEqual([
      { tokens: 24_000, toolCalls: 24 },
      { tokens: 24_000, toolCalls: 24 },
      { tokens: 24_000, toolCalls: 24 },
    ]);
    expect(segmentLimits({ maxTokens: 100, maxToolCalls: 1, partialRollouts: 3 })).toEqual({
      tokens: 33,
      toolCalls: 1,
    });
    expect(segmentLimits(PAPER_BUDGET_STAGES[0], { segmentTokens: 7 })).toEqual({ tokens: 7, toolCalls: 24 });
  });
  it('counts max-tokens and max-tool-calls as truncated', () => {
    expect(isTruncated(finished('max-tokens'))).toBe(true);
    expect(isTruncated(finished('answer'))).toBe(false);
    expect(
      truncationRate([
        finished('max-tool-calls'),
        finished('answer'),
        finished('no-answer'),
        finished('max-tokens'),
      ]),
    ).toBe(0.5);
    expect(truncationRate([])).toBe(0);
  });
});

describe('staleness', () => {
  it('reads the oldest versioned model segment', () => {
    const trajectory = { segments: [modelSegment(3), modelSegment(4), modelSegment(5)] };
    expect(oldestPolicyVersion({ segments: [...trajectory.segments, modelSegment(null)] })).toBe(3);
    expect(isStale(trajectory, 4, 1)).toBe(false);
    expect(isStale(trajectory, 5, 1)).toBe(true);
  });

  it('a segment whose engine gave no numeric version ("default", a restarted engine) is never fresh in RL', () => {
    expect(isStale({ segments: [modelSegment(null)] }, 0, 1, 'stale')).toBe(true);
    expect(isStale({ segments: [modelSegment(4), modelSegment(null)] }, 4, 8, 'stale')).toBe(true);
    // An engine that never versions its weights (a rollout, not RL): only the numbers count.
    expect(isStale({ segments: [modelSegment(null)] }, 100, 0)).toBe(false);
  });
});
