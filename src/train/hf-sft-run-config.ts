/**
 * `config.json` of a `train sft --model` run: what defines the run, written once before the
 * first step; `--resume` refuses a command line that differs in any of it. What only sizes or
 * places the run (`--steps`, `--minutes`, `--sp`, `--cpu-offload`) is not in it: a resume may
 * change those. The schema is the contract other tools read (docs/records.md).
 */
import { z } from 'zod';

export const hfSftRunConfigSchema = z
  .object({
    model: z.string().meta({ description: 'the model folder trained (absolute path)' }),
    data: z.string().meta({ description: 'the data file (absolute path)' }),
    processes: z.number().int().positive().meta({ description: 'trainer processes (--nproc)' }),
    batchSize: z.number().int().positive().meta({ description: 'examples per step', unit: 'sequences' }),
    learningRate: z.number().positive().meta({ description: 'peak learning rate of warmup + cosine' }),
    warmupSteps: z.number().int().nonnegative().meta({ description: 'linear warmup length', unit: 'steps' }),
    minLearningRateRatio: z.number().min(0).max(1).meta({
      description: 'the cosine ends at this share of the peak',
      unit: 'fraction 0–1',
    }),
    checkpointEvery: z
      .number()
      .int()
      .positive()
      .meta({ description: 'a checkpoint every K steps', unit: 'steps' }),
    microBatchTokens: z
      .number()
      .int()
      .positive()
      .meta({ description: 'token budget of a packed micro-batch', unit: 'tokens' }),
    activationCheckpointing: z.boolean().meta({ description: 'activations recomputed per decoder layer' }),
    maxSequenceTokens: z.number().int().positive().meta({
      description: 'longer examples are left out of the data',
      unit: 'tokens',
    }),
    prompt: z
      .enum(['instructed', 'text-only', 'problem-only'])
      .meta({ description: 'how a problem becomes the prompt' }),
    dialect: z.enum(['tags', 'markdown']).meta({ description: 'the code-block markup trained' }),
    seed: z.number().int().meta({ description: 'seed of the batch order and the trainer' }),
  })
  .strict();

/** What `config.json` of a `train sft --model` run holds. */
export type HfSftRunConfig = z.infer<typeof hfSftRunConfigSchema>;
