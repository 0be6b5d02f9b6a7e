/**
 * Building a trajectory record outside the agent loop (which builds its own, in
 * `src/agent/run-agent.ts`): the synthesis pipeline turns teacher drafts into records with it,
 * and tests of readers, writers and renderers grow records by hand. Pure functions: create one for a problem, append
 * what the engine generated, append a tool call with its rendered result, finish it. Each
 * returns a new record and leaves its input untouched. A trajectory is token-level when its
 * prompt has token ids and text-only when it has none; segments must follow the prompt.
 */
import { getDialect } from '../protocol/dialects.ts';
import { finalAnswer } from '../protocol/response-parser.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import type { ExecutionOutcome } from '../shared/execution-outcome.ts';
import type { ModelSegment, ToolSegment, Trajectory, TrajectoryFinishReason } from './trajectory.ts';

export type CreateTrajectoryOptions = {
  id: string;
  problemId: string | null;
  sample?: number;
  dialect: Trajectory['dialect'];
  prompt: { text: string; tokenIds: number[] | null };
  now?: () => Date;
  meta?: Record<string, unknown>;
};

/** An empty, running trajectory (no segments, `finish` null). Prompt ids null = text-only. */
export function createTrajectory(options: CreateTrajectoryOptions): Trajectory {
  const { id, problemId, sample = 0, dialect, prompt, now = () => new Date(), meta } = options;
  return {
    id,
    problemId,
    sample,
    dialect,
    prompt: { text: prompt.text, tokenIds: prompt.tokenIds === null ? null : [...prompt.tokenIds] },
    segments: [],
    toolCalls: [],
    answer: null,
    finish: null,
    timing: { startedAt: now().toISOString(), finishedAt: null, engineMs: 0, toolMs: 0 },
    ...(meta === undefined ? {} : { meta }),
  };
}

/** Whether the trajectory came from an engine without token ids. */
export function isTextOnly(trajectory: Trajectory): boolean {
  return trajectory.prompt.tokenIds === null;
}

/** The response as one text: every segment's text in order. */
export function responseText(trajectory: Trajectory): string {
  return trajectory.segments.map((segment) => segment.text).join('');
}

/** What one engine call generated, as the segment records it (the engine's result has these fields). */
export type GeneratedSegment = Pick<
  ModelSegment,
  'text' | 'tokenIds' | 'logprobs' | 'finishReason' | 'matchedStop' | 'policyVersion'
> & { replica?: string | null; step?: number | null };

/** Appends what one engine call generated (loss mask 1); `ms` is the call's wall time. */
export function appendModelSegment(trajectory: Trajectory, result: GeneratedSegment, ms = 0): Trajectory {
  assertRunning(trajectory);
  const tokenIds = requireMode(trajectory, result.tokenIds, 'model segment');
  if (tokenIds && result.logprobs && result.logprobs.length !== tokenIds.length) {
    throw new AgentMathError(
      'TRAJECTORY_MISMATCH',
      `trajectory ${trajectory.id}: ${result.logprobs.length} logprobs for ${tokenIds.length} tokens`,
    );
  }
  const segment: ModelSegment = {
    kind: 'model',
    text: result.text,
    tokenIds,
    logprobs: tokenIds && result.logprobs ? [...result.logprobs] : null,
    policyVersion: result.policyVersion,
    finishReason: result.finishReason,
    matchedStop: result.matchedStop,
    step: result.step ?? null,
    replica: result.replica ?? null,
  };
  return {
    ...trajectory,
    segments: [...trajectory.segments, segment],
    timing: { ...trajectory.timing, engineMs: trajectory.timing.engineMs + ms },
  };
}

export type ToolResultInput = {
  code: string;
  outcome: ExecutionOutcome;
  /** Wall time of the call as the agent saw it. */
  ms: number;
  /** The rendered result appended to the response (from `Dialect.renderToolResult`). */
  text: string;
  /** The rendered result tokenized on its own; null for text-only trajectories. */
  tokenIds: number[] | null;
};

/** Appends a tool call and its rendered result as a tool segment (loss mask 0). */
export function appendToolResult(trajectory: Trajectory, input: ToolResultInput): Trajectory {
  assertRunning(trajectory);
  const tokenIds = requireMode(trajectory, input.tokenIds, 'tool segment');
  const segment: ToolSegment = {
    kind: 'tool',
    text: input.text,
    tokenIds,
    toolCallIndex: trajectory.toolCalls.length,
  };
  return {
    ...trajectory,
    segments: [...trajectory.segments, segment],
    toolCalls: [...trajectory.toolCalls, { code: input.code, outcome: input.outcome, ms: input.ms }],
    timing: { ...trajectory.timing, toolMs: trajectory.timing.toolMs + input.ms },
  };
}

export type FinishOptions = {
  reason: TrajectoryFinishReason;
  error?: { code: string; message: string };
  /** The final answer; by default the last `\boxed{}` in the response's prose. */
  answer?: string | null;
  now?: () => Date;
};

/** Records why the trajectory stopped, its answer and when it finished. */
export function finishTrajectory(trajectory: Trajectory, options: FinishOptions): Trajectory {
  assertRunning(trajectory);
  const { reason, error, now = () => new Date() } = options;
  const answer =
    options.answer !== undefined
      ? options.answer
      : finalAnswer(responseText(trajectory), getDialect(trajectory.dialect).markup);
  return {
    ...trajectory,
    answer,
    finish: error === undefined ? { reason } : { reason, error },
    timing: { ...trajectory.timing, finishedAt: now().toISOString() },
  };
}

function assertRunning(trajectory: Trajectory): void {
  if (trajectory.finish !== null) {
    throw new AgentMathError(
      'TRAJECTORY_FINISHED',
      `trajectory ${trajectory.id} already finished (${trajectory.finish.reason}); it cannot grow`,
    );
  }
}

function requireMode(trajectory: Trajectory, tokenIds: number[] | null, what: string): number[] | null {
  if ((tokenIds === null) !== isTextOnly(trajectory)) {
    throw new AgentMathError(
      'TRAJECTORY_MISMATCH',
      isTextOnly(trajectory)
        ? `trajectory ${trajectory.id} is text-only but the ${what} has token ids`
        : `trajectory ${trajectory.id} has token ids but the ${what} has none`,
    );
  }
  return tokenIds === null ? null : [...tokenIds];
}
