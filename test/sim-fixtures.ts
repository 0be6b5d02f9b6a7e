/**
 * The simulator tests' small long-tailed workload: 6 prompts × 4 samples on 2 replicas, about half
 * the answers right (so groups drop), a step in well under a second of real time.
 */
import { parseWorkload } from '../src/sim/workload.ts';

export const smallSimWorkload = parseWorkload(
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
