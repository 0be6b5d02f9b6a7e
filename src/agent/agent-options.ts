/**
 * Options of the agent loop: the parts it talks to (engine, tokenizer, sandbox, dialect), and
 * its validated configuration (budgets, sampling, tool output, engine retries). Defaults live
 * in the zod schema; a misspelt key is an error naming the field.
 */
import { z } from 'zod';
import type { Tokenizer } from '../engine/tokenizer.ts';
import type { Engine } from '../engine/types.ts';
import type { Dialect } from '../protocol/dialect.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import type { Clock } from '../shared/clock.ts';
import { AgentConfigError } from './agent-errors.ts';
import type { AgentEvent } from './agent-event.ts';
import type { PromptBuilder } from './prompt-builder.ts';
import type { SessionPark } from './session-park.ts';

const count = z.number().int().nonnegative();
const positive = z.number().int().positive();

/**
 * Budgets. Tokens are counted as the engine returned them (prompt + model + tool tokens for
 * the context; model tokens only for a segment). A segment is one `runAgent` / `resumeAgent`
 * call: when its budget (`L_seg` tokens, `T_seg` tool calls) is spent the trajectory stops
 * with `segment-budget`, ready to be resumed.
 */
export const budgetsSchema = z
  .object({
    /** The context limit: prompt plus everything generated and appended. */
    maxTotalTokens: positive.default(16_384),
    /** Tool calls per trajectory; a code block beyond it ends the trajectory (`max-tool-calls`). */
    maxToolCalls: count.default(16),
    /** Upper bound on one engine call; a turn cut by it continues in the next call. */
    maxNewTokensPerTurn: positive.default(4096),
    /** Partial-rollout segment budget; absent = the run goes to the end. */
    segment: z
      .object({ maxTokens: positive.optional(), maxToolCalls: positive.optional() })
      .strict()
      .optional(),
  })
  .strict();

export const samplingSchema = z
  .object({
    temperature: z.number().nonnegative().default(1),
    topP: z.number().gt(0).lte(1).default(1),
    seed: z.number().int().optional(),
  })
  .strict();

export const toolOptionsSchema = z
  .object({
    /** Per-call limit passed to the sandbox. */
    timeoutMs: positive.default(10_000),
    /** Rendered output is cut in the middle beyond this many characters; absent = the dialect's default. */
    maxOutputChars: positive.optional(),
    /** Traceback lines kept for errors; absent = the dialect's default. */
    tracebackLines: positive.optional(),
  })
  .strict();

export const retryOptionsSchema = z
  .object({
    /** Engine attempts per turn, the first included. */
    attempts: positive.default(3),
    baseDelayMs: count.default(200),
    maxDelayMs: count.default(5000),
  })
  .strict();

export const agentConfigSchema = z
  .object({
    budgets: budgetsSchema.default(() => budgetsSchema.parse({})),
    sampling: samplingSchema.default(() => samplingSchema.parse({})),
    tool: toolOptionsSchema.default(() => toolOptionsSchema.parse({})),
    retry: retryOptionsSchema.default(() => retryOptionsSchema.parse({})),
    /** One engine call longer than this counts as a failed attempt. */
    engineTimeoutMs: positive.default(600_000),
  })
  .strict();

export type Budgets = z.infer<typeof budgetsSchema>;
export type SamplingOptions = z.infer<typeof samplingSchema>;
export type AgentConfig = z.infer<typeof agentConfigSchema>;

export type { Problem } from './problem.ts';

/** Options of `runAgent` and `resumeAgent`. */
export type AgentOptions = z.input<typeof agentConfigSchema> & {
  engine: Engine;
  /** Null for text-only engines: the trajectory is then text-level (see docs/agent.md). */
  tokenizer: Tokenizer | null;
  sandbox: SandboxProvider;
  dialect: Dialect;
  /** Builds the chat messages; default `instructedPrompt` (use `problemOnlyPrompt` for the embedded model). */
  prompt?: PromptBuilder;
  onEvent?: (event: AgentEvent) => void;
  signal?: AbortSignal;
  /**
   * A pause request, distinct from the hard abort: when it fires the trajectory stops with
   * `paused` — in the middle of an engine call, keeping the tokens the engine returns with
   * `finishReason: 'abort'` — and `resumeAgent` continues it later exactly where it stopped.
   * A running tool call finishes first. See docs/agent.md, "How a scheduler pauses and resumes".
   */
  pause?: AbortSignal;
  /** The rollout step recorded on every model segment this call produces; default null. */
  step?: number | null;
  /** Sample index within the problem's group. */
  sample?: number;
  /** Where a session waits between segments instead of being closed (see `SessionPark`). */
  park?: SessionPark;
  meta?: Record<string, unknown>;
  createId?: () => string;
  /** Wall-clock stamps for `timing.startedAt` / `finishedAt` (ISO strings); default the system date. */
  now?: () => Date;
  /**
   * Measures durations (`timing.engineMs`, `toolMs`, tool calls), times engine calls out, waits
   * between retries and paces the cooperative yield; default `systemClock`. A virtual clock
   * runs the loop in virtual time.
   */
  clock?: Clock;
};

/** Validates the configuration part of the options, naming the offending field. */
export function resolveAgentConfig(options: AgentOptions): AgentConfig {
  const { budgets, sampling, tool, retry, engineTimeoutMs } = options;
  const parsed = agentConfigSchema.safeParse({ budgets, sampling, tool, retry, engineTimeoutMs });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') || '(options)';
    throw new AgentConfigError(`agent option "${field}": ${issue?.message ?? 'invalid'}`, {
      cause: parsed.error,
    });
  }
  return parsed.data;
}
