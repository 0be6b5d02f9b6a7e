/**
 * The lower bound on a steady-state rollout step's time, from the plans of one step's
 * trajectories (a step in steady state does one step's worth of work, whatever it resumes):
 *
 * - **work**: every model token decoded once, at the cost model's best, over all replicas:
 *   `(c·Σcontext + b·N + a·I + prefill) / replicas` (with a mixture of experts' weight reads at
 *   `N / I` sequences an iteration), where `Σcontext` is the context each token attends to, `N`
 *   the tokens, `prefill` the cost of only what no scheme can skip (each distinct prompt once,
 *   each tool output once, at its context), and `I` the fewest decode iterations that can produce
 *   the tokens: at most `maxRunning` sequences an iteration, and at most `kvCapacity` tokens of
 *   context between them (a token attending to `x` tokens of context needs them in the
 *   replica's KV), so `I = max(N / maxRunning, Σcontext / kvCapacity)`;
 * - **critical path**: the longest chain partial rollout cannot cut: one segment (at most
 *   `L_seg = maxTokens / N` tokens and `T_seg = maxToolCalls / N` tool calls) of one
 *   trajectory decoded alone (`a + b + c·context` per token), its prompt's prefill, and its tool
 *   calls at the latency distribution's minimum.
 *
 * The bound is the larger of the two. It is still optimistic: no prefix is ever evicted and
 * recomputed, and every iteration runs at the larger of the two batch limits.
 */
import { quantile } from './distribution.ts';
import { decodeMs, prefillMs } from './engine-cost-model.ts';
import type { TrajectoryPlan } from './trajectory-plan.ts';
import type { Workload } from './workload.ts';

export type StepBound = {
  stepSeconds: number;
  workSeconds: number;
  /** The work term with the batch limited by `maxRunning` alone (KV capacity ignored). */
  workSecondsIgnoringKv: number;
  criticalPathSeconds: number;
  /** Model tokens of one step's trajectories. */
  tokens: number;
};

export type BoundTrajectory = { promptTokens: number; problem: number; plan: TrajectoryPlan };

export function stepBound(workload: Workload, trajectories: readonly BoundTrajectory[]): StepBound {
  const { costModel: cost, budgets } = workload;
  const segmentTokens = Math.floor(budgets.maxTokens / budgets.partialRollouts);
  const segmentCalls = Math.max(1, Math.floor(budgets.maxToolCalls / budgets.partialRollouts));
  const minLatencyMs = quantile(workload.toolLatencyMs, 0);
  let contextSum = 0;
  let tokens = 0;
  let prefillTotalMs = 0;
  let longestMs = 0;
  const prompts = new Set<number>();
  for (const { promptTokens, problem, plan } of trajectories) {
    if (!prompts.has(problem)) {
      prompts.add(problem);
      prefillTotalMs += prefillMs(cost, 0, promptTokens);
    }
    const responseTokens = Math.min(plan.responseTokens, budgets.maxTokens);
    const calls = plan.toolCalls.slice(0, budgets.maxToolCalls);
    // Runs of model tokens between tool calls, each at its starting context.
    let context = promptTokens;
    let made = 0;
    let segment = { tokens: 0, calls: 0, ms: prefillMs(cost, 0, promptTokens) };
    const decodeRun = (count: number) => {
      let left = count;
      while (left > 0) {
        const take = Math.min(left, segmentTokens - segment.tokens);
        // Σ over the run of (a + b + c·context): the chain if this trajectory ran alone.
        segment.ms += decodeMs(cost, 1, context, take);
        contextSum += take * context + (take * (take - 1)) / 2;
        context += take;
        tokens += take;
        made += take;
        left -= take;
        segment.tokens += take;
        if (segment.tokens >= segmentTokens) closeSegment();
      }
    };
    const closeSegment = () => {
      longestMs = Math.max(longestMs, segment.ms);
      segment = { tokens: 0, calls: 0, ms: 0 };
    };
    let position = 0;
    for (const call of calls) {
      const at = Math.round(call.at * responseTokens);
      decodeRun(Math.max(0, at - position));
      position = Math.max(position, at);
      const output = Math.min(call.outputTokens, 2000);
      const outputMs = prefillMs(cost, context, context + output);
      prefillTotalMs += outputMs;
      context += output;
      segment.ms += minLatencyMs + outputMs;
      segment.calls++;
      if (segment.calls >= segmentCalls) closeSegment();
    }
    decodeRun(Math.max(0, responseTokens - made));
    closeSegment();
  }
  // Iterations of `tokens / iterations` sequences each: a + b·B (+ the experts B touch) apiece.
  const workMs = (iterations: number) =>
    (cost.decodePerContextTokenMs * contextSum +
      (iterations > 0 ? iterations * decodeMs(cost, tokens / iterations, 0, 1) : 0) +
      prefillTotalMs) /
    workload.replicas;
  const byBatch = tokens / workload.maxRunningRequests;
  const workSeconds = workMs(Math.max(byBatch, contextSum / workload.kvCapacityTokens)) / 1000;
  const workSecondsIgnoringKv = workMs(byBatch) / 1000;
  const criticalPathSeconds = longestMs / 1000;
  return {
    stepSeconds: Math.max(workSeconds, criticalPathSeconds),
    workSeconds,
    workSecondsIgnoringKv,
    criticalPathSeconds,
    tokens,
  };
}
