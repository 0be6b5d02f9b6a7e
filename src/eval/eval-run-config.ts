/**
 * `config.json` of an evaluation run folder: what the runner adds to its caller's configuration
 * (the benchmark, k, concurrency, when this session started, whether it resumed), and the
 * configuration `agentmath eval` gives (docs/records.md). Rewritten at every start; a resume
 * compares the saved `identity`.
 */
import { z } from 'zod';

/** The fields `runEval` writes into every evaluation's `config.json`. */
export const evalRunnerConfigShape = {
  benchmark: z.string().meta({ description: 'the benchmark name' }),
  problems: z.number().int().nonnegative().meta({ description: 'problems evaluated', unit: 'problems' }),
  k: z.number().int().positive().meta({ description: 'samples per problem', unit: 'samples' }),
  concurrency: z
    .number()
    .int()
    .positive()
    .meta({ description: 'trajectories in flight at once', unit: 'trajectories' }),
  startedAt: z.iso.datetime().meta({ description: 'when this session started (ISO 8601, UTC)' }),
  resumed: z.boolean().meta({ description: 'this session continued trajectories already in the folder' }),
};

export const evalRunnerConfigSchema = z.object(evalRunnerConfigShape).strict();
export type EvalRunnerConfig = z.infer<typeof evalRunnerConfigSchema>;

/** The agent budgets an evaluation records. */
export const recordedBudgetsSchema = z
  .object({
    maxTotalTokens: z
      .number()
      .int()
      .positive()
      .meta({ description: 'prompt + response budget', unit: 'tokens' }),
    maxToolCalls: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: 'code calls per trajectory', unit: 'calls' }),
    maxNewTokensPerTurn: z
      .number()
      .int()
      .positive()
      .optional()
      .meta({ description: 'one engine call at most', unit: 'tokens' }),
  })
  .strict()
  .meta({ description: "the agent loop's budgets" });

/** The sampling an evaluation records. */
export const recordedSamplingSchema = z
  .object({
    temperature: z.number().min(0).meta({ description: 'sampling temperature' }),
    topP: z.number().gt(0).max(1).meta({ description: 'nucleus sampling threshold' }),
    seed: z.number().int().optional().meta({ description: 'sampling seed (absent: none)' }),
  })
  .strict()
  .meta({ description: 'sampling of every engine call' });

/** The agent settings an evaluation records (docs/agent.md). */
export const evalAgentConfigSchema = z
  .object({
    budgets: recordedBudgetsSchema,
    sampling: recordedSamplingSchema,
    tool: z
      .object({
        timeoutMs: z.number().int().positive().meta({ description: 'limit of one code call', unit: 'ms' }),
      })
      .strict()
      .optional()
      .meta({ description: 'the sandbox call settings' }),
  })
  .strict();

export const evalCommandConfigSchema = z
  .object({
    command: z.literal('eval').meta({ description: 'the command that wrote the run' }),
    benchmarkSource: z
      .union([
        z
          .object({
            kind: z
              .literal('file')
              .meta({ description: 'file: a benchmark file; builtin: a built-in benchmark' }),
            path: z.string().meta({ description: 'the benchmark file' }),
          })
          .strict(),
        z.object({ kind: z.literal('builtin') }).strict(),
      ])
      .meta({ description: 'where the problems came from: a file, or a built-in benchmark' }),
    limit: z
      .number()
      .int()
      .positive()
      .nullable()
      .meta({ description: 'the first N problems only (null: all)', unit: 'problems' }),
    engine: z
      .object({
        api: z
          .enum(['sglang', 'vllm', 'openai', 'openai-chat'])
          .meta({ description: 'the server API spoken' }),
        url: z
          .union([z.string(), z.array(z.string())])
          .nullable()
          .meta({ description: 'the server URL, several URLs behind the router, or embedded' }),
        model: z
          .string()
          .nullable()
          .meta({ description: 'the model: a name sent to the server, or the embedded model folder' }),
        name: z.string().meta({ description: "the engine's name in trajectories" }),
      })
      .strict()
      .meta({ description: 'the engine evaluated' }),
    tokenizer: z.string().nullable().meta({ description: 'the tokenizer folder (null: text-level engine)' }),
    dialect: z
      .enum(['tags', 'markdown'])
      .meta({ description: 'the code-block markup of prompts and answers' }),
    prompt: z
      .enum(['instructed', 'text-only', 'problem-only'])
      .meta({ description: 'how a problem becomes the prompt' }),
    agent: evalAgentConfigSchema.meta({
      description: "the agent loop's budgets, sampling and tool settings",
    }),
    seed: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'sampling seed of sample 0, +1 per sample (null: none)' }),
    sandbox: z.string().meta({ description: 'the sandbox node URL, or local' }),
    grader: z.enum(['ours', 'math-verify']).meta({ description: 'who graded' }),
    identity: z
      .record(z.string(), z.unknown().meta({ description: 'one defining value, as the command resolved it' }))
      .meta({ description: 'what a --resume must match (benchmark, k, engine, budgets, sampling, …)' }),
    ...evalRunnerConfigShape,
  })
  .strict();

/** What `config.json` of an `agentmath eval` run holds. */
export type EvalCommandConfig = z.infer<typeof evalCommandConfigSchema>;
