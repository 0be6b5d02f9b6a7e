import { describe, expect, it } from 'vitest';
import { groupWouldBeKept, planCorrect, planSoFar } from './abandoned-groups.ts';
import type { TrajectoryPlan } from './trajectory-plan.ts';
import { parseWorkload } from './workload.ts';

const workload = parseWorkload(
  {
    stepPrompts: 1,
    groupSize: 2,
    promptTokens: { constant: 10 },
    responseTokens: { constant: 60 },
    toolCalls: { mean: 0, max: 4 },
    toolOutputTokens: { constant: 5 },
    toolLatencyMs: { constant: 40 },
    replicas: 1,
    costModel: {
      decodeBaseMs: 10,
      decodePerSequenceMs: 1,
      decodePerContextTokenMs: 0.01,
      prefillPerTokenMs: 0.5,
    },
    kvCapacityTokens: 1000,
    maxRunningRequests: 4,
    sandboxWorkers: 1,
    budgets: { maxTokens: 100, maxToolCalls: 2, partialRollouts: 2 },
  },
  'test',
);

const right: TrajectoryPlan = { responseTokens: 60, toolCalls: [], answer: '1' };
const wrong: TrajectoryPlan = { responseTokens: 60, toolCalls: [], answer: '0' };

describe('abandoned groups', () => {
  it('a plan is correct when it answers right within the token and tool-call budgets', () => {
    expect(planCorrect(workload, 10, right)).toBe(true);
    expect(planCorrect(workload, 10, wrong)).toBe(false);
    // Prompt + response past the 100-token budget: cut before its answer.
    expect(planCorrect(workload, 10, { ...right, responseTokens: 95 })).toBe(false);
    const call = { at: 0.5, outputTokens: 1 };
    expect(planCorrect(workload, 10, { ...right, toolCalls: [call, call, call] })).toBe(false);
  });

  it('a group would be kept when its members would be graded differently', () => {
    expect(groupWouldBeKept(workload, 10, [right, wrong])).toBe(true);
    expect(groupWouldBeKept(workload, 10, [right, right])).toBe(false);
    expect(groupWouldBeKept(workload, 10, [wrong, { ...right, responseTokens: 95 }])).toBe(false);
  });

  it('an abandoned member counts for the tokens and tool calls it ran, at their places', () => {
    const plan: TrajectoryPlan = {
      responseTokens: 100,
      toolCalls: [
        { at: 0.2, outputTokens: 7 },
        { at: 0.6, outputTokens: 9 },
      ],
      answer: '1',
    };
    const cut = planSoFar(plan, { modelTokens: 40, toolCalls: 1 });
    expect(cut.responseTokens).toBe(40);
    // The first call sat at token 20 of 100: token 20 of the 40 run.
    expect(cut.toolCalls).toEqual([{ at: 0.5, outputTokens: 7 }]);
    expect(planSoFar(plan, { modelTokens: 0, toolCalls: 0 })).toEqual({
      ...plan,
      responseTokens: 0,
      toolCalls: [],
    });
  });
});
