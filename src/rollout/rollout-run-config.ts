/**
 * `config.json` of an `agentmath rollout` run folder: what defines the run (the problems, the
 * engines, the router, the prompt, the rollout configuration, sampling and the seed), written
 * at the first start; `--resume` refuses a command line that differs in any of it
 * (docs/records.md). `rollout` nests the resolved rollout configuration of `rollout-config.ts`
 * (docs/rollout.md describes each of its fields).
 */
import { z } from 'zod';
import { rolloutConfigSchema } from './rollout-config.ts';

export const rolloutRunConfigSchema = z
  .object({
    command: z.literal('rollout').meta({ description: 'the command that wrote the run' }),
    benchmarkSource: z
      .union([
        z
          .object({
            kind: z
              .literal('file')
              .meta({ description: 'file: a problems file; builtin: a built-in benchmark' }),
            path: z.string().meta({ description: 'the problems file' }),
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
    replicas: z
      .union([
        z.array(z.string()).meta({ description: 'engine URLs (--engine)' }),
        z
          .object({
            model: z.string().meta({ description: 'the model folder the embedded replicas served' }),
            count: z
              .number()
              .int()
              .positive()
              .meta({ description: 'embedded replicas started', unit: 'replicas' }),
          })
          .strict(),
      ])
      .meta({ description: 'the engines: their URLs, or the embedded replicas started' }),
    router: z
      .enum(['round-robin', 'least-requests', 'prefix-aware', 'cache-aware'])
      .meta({ description: 'the load-balancing policy' }),
    prompt: z
      .enum(['instructed', 'text-only', 'problem-only'])
      .meta({ description: 'how a problem becomes the prompt' }),
    rollout: rolloutConfigSchema.meta({
      description: 'the resolved rollout configuration (docs/rollout.md)',
    }),
    agent: z
      .object({
        sampling: z
          .object({
            temperature: z.number().min(0).meta({ description: 'sampling temperature' }),
            topP: z.number().gt(0).max(1).meta({ description: 'nucleus sampling threshold' }),
            seed: z.number().int().meta({ description: 'sampling seed' }),
          })
          .strict()
          .meta({ description: "every trajectory's sampling" }),
      })
      .strict()
      .meta({ description: "the agent loop's settings the command gives" }),
    seed: z.number().int().meta({ description: 'seed of ids and of sampling' }),
  })
  .strict();

/** What `config.json` of a rollout run holds. */
export type RolloutRunConfig = z.infer<typeof rolloutRunConfigSchema>;
