import { describe, expect, it } from 'vitest';
import { stepBound } from './step-bound.ts';
import { parseWorkload } from './workload.ts';

const workload = parseWorkload(
  {
    stepPrompts: 1,
    groupSize: 1,
    promptTokens: { constant: 10 },
    responseTokens: { constant: 60 },
    toolCalls: { mean: 0, max: 4 },
    toolOutputTokens: { constant: 5 },
    toolLatencyMs: { lognormal: { mu: 5, sigma: 1 }, min: 40 },
    replicas: 2,
    costModel: {
      decodeBaseMs: 10,
      decodePerSequenceMs: 1,
      decodePerContextTokenMs: 0.01,
      prefillPerTokenMs: 0.5,
    },
    kvCapacityTokens: 1000,
    maxRunningRequests: 4,
    sandboxWorkers: 1,
    budgets: { maxTokens: 100, maxToolCalls: 4, partialRollouts: 2 },
  },
  'test',
);

describe('stepBound', () => {
  it('work over the replicas at a full batch, against the longest segment decoded alone', () => {
    const bound = stepBound(workload, [
      { promptTokens: 10, problem: 0, plan: { responseTokens: 60, toolCalls: [], answer: '1' } },
    ]);
    // Σcontext = 60·10 + 60·59/2 = 2370; iterations max(60/4, 2370/1000) = 15;
    // work = (0.01·2370 + 1·60 + 10·15 + 0.5·10) / 2.
    expect(bound.workSeconds * 1000).toBeCloseTo(119.35, 9);
    expect(bound.workSecondsIgnoringKv).toBe(bound.workSeconds);
    // Segment 1: prefill 5 + 50 tokens from context 10: 50·11 + 0.01·(50·10 + 50·49/2).
    expect(bound.criticalPathSeconds * 1000).toBeCloseTo(5 + 550 + 17.25, 9);
    expect(bound.stepSeconds).toBe(bound.criticalPathSeconds);
  });

  it('a tool call adds its output to the context and its minimum latency to the chain', () => {
    const bound = stepBound(workload, [
      {
        promptTokens: 10,
        problem: 0,
        plan: { responseTokens: 40, toolCalls: [{ at: 0.5, outputTokens: 5 }], answer: '1' },
      },
    ]);
    // 20 tokens from 10, a call (5 tokens, 40 ms, 2.5 ms prefill), 20 tokens from 35.
    const chain = 5 + (20 * 11 + 0.01 * (200 + 190)) + 40 + 2.5 + (20 * 11 + 0.01 * (700 + 190));
    expect(bound.criticalPathSeconds * 1000).toBeCloseTo(chain, 9);
    expect(bound.tokens).toBe(40);
  });

  it('counts the decode iterations KV capacity forces when it binds before the batch limit', () => {
    // No tool calls and 60 tokens at most: the longest trajectory (70 tokens) fits 100 tokens of KV.
    const small = parseWorkload(
      {
        ...workload,
        kvCapacityTokens: 100,
        toolCalls: { mean: 0, max: 0 },
        budgets: { maxTokens: 60, maxToolCalls: 0, partialRollouts: 2 },
      },
      'test',
    );
    const plan = { responseTokens: 60, toolCalls: [], answer: '1' };
    const bound = stepBound(small, [{ promptTokens: 10, problem: 0, plan }]);
    // Iterations max(60/4, 2370/100) = 23.7: a = 10 ms each, 87 ms more than at a full batch.
    expect(bound.workSeconds * 1000).toBeCloseTo((0.01 * 2370 + 60 + 10 * 23.7 + 5) / 2, 9);
    expect((bound.workSeconds - bound.workSecondsIgnoringKv) * 1000).toBeCloseTo((10 * (23.7 - 15)) / 2, 9);
  });
});
