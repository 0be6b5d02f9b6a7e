/**
 * What early abandonment (the rollout's `abandonAgreeing`) costs and saves, as the simulator
 * can tell from the plans: whether an abandoned group would have been kept had every member
 * run to its end (its members' plans fix their answers), and the plan of an abandoned member
 * cut to what it ran (so the bound for the work decided counts what was spent on it, not its
 * whole plan).
 */
import type { Trajectory } from '../trajectory/trajectory.ts';
import type { TrajectoryPlan } from './trajectory-plan.ts';
import type { Workload } from './workload.ts';
import { SIMULATED_ANSWER } from './workload-plans.ts';

/** Tokens the agent renders around a tool output in the context (`<interpreter>` wrappers). */
const OUTPUT_WRAPPER_TOKENS = 32;

/**
 * Whether a plan, run to its end under the workload's budgets, is graded correct: it answers
 * right, within the tool-call budget, and its context (prompt, response, tool outputs) fits the
 * token budget. An estimate of what the agent does (the wrappers' size is approximate); the
 * simulator checks it against the groups it did decide (`AbandonAudit.mispredicted`).
 */
export function planCorrect(workload: Workload, promptTokens: number, plan: TrajectoryPlan): boolean {
  const { budgets } = workload;
  if (plan.answer !== SIMULATED_ANSWER || plan.toolCalls.length > budgets.maxToolCalls) return false;
  const outputs = plan.toolCalls.reduce(
    (sum, call) => sum + Math.min(call.outputTokens, 2000) + OUTPUT_WRAPPER_TOKENS,
    0,
  );
  return promptTokens + plan.responseTokens + outputs <= budgets.maxTokens;
}

/** Whether a group of these plans would be kept: its members' predicted grades differ. */
export function groupWouldBeKept(
  workload: Workload,
  promptTokens: number,
  plans: readonly TrajectoryPlan[],
): boolean {
  const grades = plans.map((plan) => planCorrect(workload, promptTokens, plan));
  return grades.some((grade) => grade !== grades[0]);
}

/** How far a trajectory ran: the model tokens it produced and the tool calls it made. */
export function ranSoFar(trajectory: Trajectory): { modelTokens: number; toolCalls: number } {
  const modelTokens = trajectory.segments.reduce(
    (sum, segment) => sum + (segment.kind === 'model' ? (segment.tokenIds?.length ?? 0) : 0),
    0,
  );
  return { modelTokens, toolCalls: trajectory.toolCalls.length };
}

/**
 * The plan of a member stopped unfinished, as far as it ran: the model tokens it produced and
 * the tool calls it made, at their places in that shorter response.
 */
export function planSoFar(
  plan: TrajectoryPlan,
  ran: { modelTokens: number; toolCalls: number },
): TrajectoryPlan {
  const responseTokens = Math.max(0, Math.min(ran.modelTokens, plan.responseTokens));
  const toolCalls = plan.toolCalls.slice(0, ran.toolCalls).map((call) => ({
    ...call,
    at: responseTokens > 0 ? Math.min(1, (call.at * plan.responseTokens) / responseTokens) : 0,
  }));
  return { ...plan, responseTokens, toolCalls };
}

/** Per step: abandoned groups, of those how many would have been kept, and the check of the estimate. */
export type AbandonAudit = {
  groupsAbandoned: number;
  /** Abandoned groups whose members' plans disagree: kept groups lost to the abandonment. */
  keptGroupsLost: number;
  /** Of the two above, those abandoned on agreeing wrong answers (the rest agreed on right ones). */
  abandonedAllWrong: number;
  keptGroupsLostAllWrong: number;
  /** Groups decided the normal way whose kept/dropped verdict `groupWouldBeKept` got wrong. */
  mispredicted: number;
  /** Groups decided the normal way (the estimate's sample). */
  checked: number;
};
