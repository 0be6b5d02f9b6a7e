/**
 * The Trajectory record: one attempt at one problem, as the agent loop built it. It holds
 * exactly the token ids the engine returned (never re-tokenized), tool output tokens appended
 * with loss mask 0, the tool calls with their outcomes, and why it stopped.
 *
 * Text-only engines (OpenAI-compatible APIs) produce the same record with `tokenIds` and
 * `logprobs` null on every segment and on the prompt.
 */
import { z } from 'zod';

export const executionOutcomeSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('ok'), stdout: z.string(), stderr: z.string(), ms: z.number() }).strict(),
  z
    .object({
      status: z.literal('error'),
      stdout: z.string(),
      stderr: z.string(),
      exception: z.string(),
      ms: z.number(),
    })
    .strict(),
  z.object({ status: z.literal('timeout'), stdout: z.string(), limitMs: z.number() }).strict(),
  z.object({ status: z.literal('memory-exceeded'), limitBytes: z.number() }).strict(),
  z.object({ status: z.literal('killed'), reason: z.string() }).strict(),
]);

const tokenIds = z.array(z.number().int().nonnegative()).nullable();

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
  .strict();

export type ModelSegment = z.infer<typeof modelSegmentSchema>;
export type ToolSegment = z.infer<typeof toolSegmentSchema>;
export type Segment = z.infer<typeof segmentSchema>;
export type ToolCall = z.infer<typeof toolCallSchema>;
export type TrajectoryFinishReason = z.infer<typeof trajectoryFinishReasonSchema>;
export type Trajectory = z.infer<typeof trajectorySchema>;
