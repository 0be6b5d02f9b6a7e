/**
 * The Trajectory record: one attempt at one problem, as the agent loop built it. It holds
 * exactly the token ids the engine returned (never re-tokenized), tool output tokens appended
 * with loss mask 0, the tool calls with their outcomes, and why it stopped.
 *
 * Text-only engines (OpenAI-compatible APIs) produce the same record with `tokenIds` and
 * `logprobs` null on every segment and on the prompt.
 */
import { z } from 'zod';
import { executionOutcomeSchema } from '../shared/execution-outcome.ts';

export { executionOutcomeSchema };

const TOKEN_ID = 'expected nonnegative integer';
const tokenIds = z
  .array(z.number({ error: TOKEN_ID }).int({ error: TOKEN_ID }).nonnegative({ error: TOKEN_ID }))
  .nullable();

/** Tokens the model generated in one engine call: loss mask 1. */
export const modelSegmentSchema = z
  .object({
    kind: z.literal('model'),
    text: z.string(),
    tokenIds,
    logprobs: z.array(z.number()).nullable(),
    /** The policy version that produced these tokens (partial rollouts mix versions). */
    policyVersion: z.number().int().nullable(),
    /** Why this engine call ended. */
    finishReason: z.enum(['stop', 'length', 'abort']),
    matchedStop: z.string().nullable(),
    /** The rollout step that generated this segment; null outside rollouts. */
    step: z.number().int().nonnegative().nullable().default(null),
    /** The engine replica that served this call (URL or name); null when unknown. */
    replica: z.string().nullable().default(null),
  })
  .strict();

/** Rendered interpreter output appended after a code block: loss mask 0, logprob 0. */
export const toolSegmentSchema = z
  .object({
    kind: z.literal('tool'),
    text: z.string(),
    tokenIds,
    /** Index into `toolCalls` of the call whose result this is. */
    toolCallIndex: z.number().int().nonnegative(),
  })
  .strict();

export const segmentSchema = z.discriminatedUnion('kind', [modelSegmentSchema, toolSegmentSchema]);

export const toolCallSchema = z
  .object({
    code: z.string(),
    outcome: executionOutcomeSchema,
    /** Wall-clock time of the call as the agent saw it, sandbox round trip included. */
    ms: z.number().nonnegative(),
  })
  .strict();

export const trajectoryFinishReasonSchema = z.enum([
  'answer',
  'no-answer',
  'max-tokens',
  'max-tool-calls',
  'segment-budget',
  'paused',
  'aborted',
  'error',
]);

export const trajectorySchema = z
  .object({
    id: z.string().min(1),
    problemId: z.string().nullable(),
    /** Sample index within the problem's group (0..k-1). */
    sample: z.number().int().nonnegative(),
    dialect: z.enum(['tags', 'markdown']),
    prompt: z.object({ text: z.string(), tokenIds }).strict(),
    segments: z.array(segmentSchema),
    toolCalls: z.array(toolCallSchema),
    /** The extracted final answer (last \boxed{}), or null. */
    answer: z.string().nullable(),
    /** Null while the trajectory is still running. */
    finish: z
      .object({
        reason: trajectoryFinishReasonSchema,
        /** For `error`: what broke, with its stable code. */
        error: z.object({ code: z.string(), message: z.string() }).strict().optional(),
      })
      .strict()
      .nullable(),
    timing: z
      .object({
        startedAt: z.string(),
        finishedAt: z.string().nullable(),
        engineMs: z.number().nonnegative(),
        toolMs: z.number().nonnegative(),
      })
      .strict(),
    /** Free-form labels a runner attaches (reference answer, grade, engine name). */
    meta: z.record(z.string(), z.unknown()).optional(),
  })
  .strict()
  .superRefine((trajectory, context) => {
    for (const issue of consistencyIssues(trajectory)) context.addIssue({ code: 'custom', ...issue });
  });

/**
 * What the field types cannot say: token ids are present everywhere or nowhere (text-only),
 * a model segment has one logprob per token, and a tool segment points at an existing call.
 */
function consistencyIssues(trajectory: {
  prompt: { tokenIds: number[] | null };
  segments: { kind: string; tokenIds: number[] | null; logprobs?: number[] | null; toolCallIndex?: number }[];
  toolCalls: unknown[];
}): { path: (string | number)[]; message: string }[] {
  const issues: { path: (string | number)[]; message: string }[] = [];
  const textOnly = trajectory.prompt.tokenIds === null;
  trajectory.segments.forEach((segment, index) => {
    if ((segment.tokenIds === null) !== textOnly) {
      issues.push({
        path: ['segments', index, 'tokenIds'],
        message: textOnly
          ? 'expected null: the prompt has no token ids (text-only trajectory)'
          : 'expected token ids: the prompt has token ids',
      });
    }
    if (segment.tokenIds && segment.logprobs && segment.logprobs.length !== segment.tokenIds.length) {
      issues.push({
        path: ['segments', index, 'logprobs'],
        message: `expected ${segment.tokenIds.length} logprobs (one per token), got ${segment.logprobs.length}`,
      });
    }
    if (segment.toolCallIndex !== undefined && segment.toolCallIndex >= trajectory.toolCalls.length) {
      issues.push({
        path: ['segments', index, 'toolCallIndex'],
        message: `expected an index below ${trajectory.toolCalls.length} (the number of tool calls)`,
      });
    }
  });
  return issues;
}

export type ModelSegment = z.infer<typeof modelSegmentSchema>;
export type ToolSegment = z.infer<typeof toolSegmentSchema>;
export type Segment = z.infer<typeof segmentSchema>;
export type ToolCall = z.infer<typeof toolCallSchema>;
export type TrajectoryFinishReason = z.infer<typeof trajectoryFinishReasonSchema>;
export type Trajectory = z.infer<typeof trajectorySchema>;
