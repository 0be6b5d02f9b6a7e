/**
 * Stop conditions of the agent loop as small named predicates. Each looks at the loop state
 * and returns the finish reason it stands for, or null. The loop checks `stopsBeforeTurn` in
 * order before every engine call; the others classify how a turn ended.
 */
import type { GenerateResult } from '../engine/types.ts';
import type { TrajectoryFinishReason } from '../trajectory/trajectory.ts';
import type { Budgets } from './agent-options.ts';
import type { LoopState } from './loop-state.ts';

export type StopCheck = {
  state: LoopState;
  budgets: Budgets;
  signal: AbortSignal | undefined;
  /** The caller's pause request (see `AgentOptions.pause`). */
  pause?: AbortSignal | undefined;
};
export type StopCondition = (check: StopCheck) => TrajectoryFinishReason | null;

/** The caller aborted. */
export const abortRequested: StopCondition = ({ signal }) => (signal?.aborted ? 'aborted' : null);

/** The caller asked the trajectory to pause: park it for a later resume. */
export const pauseRequested: StopCondition = ({ pause }) => (pause?.aborted ? 'paused' : null);

/** No room is left in the context for another token. */
export const contextFull: StopCondition = ({ state, budgets }) =>
  state.contextTokens >= budgets.maxTotalTokens ? 'max-tokens' : null;

/** This segment's token or tool-call budget is spent: park the trajectory for a later resume. */
export const segmentSpent: StopCondition = ({ state, budgets }) => {
  const segment = budgets.segment;
  if (segment === undefined) return null;
  const tokensSpent = segment.maxTokens !== undefined && state.segmentTokens >= segment.maxTokens;
  const callsSpent = segment.maxToolCalls !== undefined && state.segmentToolCalls >= segment.maxToolCalls;
  return tokensSpent || callsSpent ? 'segment-budget' : null;
};

/** Checked in this order before every engine call; the first that fires ends the trajectory. */
export const stopsBeforeTurn: readonly StopCondition[] = [
  abortRequested,
  contextFull,
  segmentSpent,
  pauseRequested,
];

export function firstStop(
  conditions: readonly StopCondition[],
  check: StopCheck,
): TrajectoryFinishReason | null {
  for (const condition of conditions) {
    const reason = condition(check);
    if (reason !== null) return reason;
  }
  return null;
}

/** The model ended its response (EOS): no stop string matched. */
export function endedWithEos(result: GenerateResult): boolean {
  return result.finishReason === 'stop' && result.matchedStop === null;
}

/** A code block closed but the trajectory has used all its tool calls. */
export const toolCallsSpent: StopCondition = ({ state, budgets }) =>
  state.trajectory.toolCalls.length >= budgets.maxToolCalls ? 'max-tool-calls' : null;

/** New tokens the next engine call may generate: the tightest of the three budgets. */
export function newTokenAllowance(state: LoopState, budgets: Budgets): number {
  let allowance = Math.min(budgets.maxNewTokensPerTurn, budgets.maxTotalTokens - state.contextTokens);
  const segmentTokens = budgets.segment?.maxTokens;
  if (segmentTokens !== undefined) allowance = Math.min(allowance, segmentTokens - state.segmentTokens);
  return Math.max(0, allowance);
}
