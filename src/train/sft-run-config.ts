/**
 * `config.json` of a `train sft` run (every model): the resolved configuration, written once
 * before the data stage; `--resume` refuses a command line that differs in any of it but the
 * fields that size or place the run (`steps`, `maxMinutes`, `threads`, `sequenceParallel`,
 * `cpuOffload`). The schema is the contract other tools read (docs/records.md); the fields are
 * those of `sft-config.ts` with every model-decided default filled in.
 */
import { z } from 'zod';

const steps = (description: string) => z.number().int().nonnegative().meta({ description, unit: 'steps' });

export const sftRunConfigSchema = z
  .object({
    model: z
      .string()
      .meta({ description: 'the model folder trained (absolute path; a new byte model: DIR/init-model)' }),
    data: z
      .string()
      .nullable()
      .meta({ description: 'the data file (absolute path), or null: arith solutions the run wrote' }),
    task: z.literal('arith').meta({ description: 'the task family of written solutions' }),
    style: z.enum(['tool', 'text']).meta({ description: 'written solutions: tool-augmented or text-only' }),
    trainProblems: z
      .number()
      .int()
      .positive()
      .meta({ description: 'problems written (one solution each)', unit: 'problems' }),
    levels: z.array(z.number().int()).meta({ description: 'arith levels of the written problems' }),
    levelWeights: z.array(z.number().int().positive()).nullable().default(null).meta({
      description:
        'problems per level in each turn of the rotation, one per level; null (or absent): one each',
    }),
    toolShare: z
      .number()
      .min(0)
      .max(1)
      .meta({ description: 'text data: share of problems with their tool solution', unit: 'fraction 0–1' }),
    maskToolOutput: z.boolean().meta({ description: 'interpreter output left out of the loss' }),
    dialect: z.enum(['tags', 'markdown']).meta({ description: 'the code-block markup trained' }),
    prompt: z
      .enum(['instructed', 'text-only', 'problem-only'])
      .meta({ description: 'how a problem becomes the prompt' }),
    seed: z.number().int().meta({
      description: "seed of a new model's weights, the written data, the batch order and the trainer",
    }),
    steps: steps("the run's length asked for (schedule.json has the length a time budget fitted)"),
    maxMinutes: z
      .number()
      .positive()
      .nullable()
      .meta({ description: "the first session's training-time budget, or null", unit: 'min' }),
    processes: z.number().int().positive().meta({ description: 'trainer processes (--nproc)' }),
    threads: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: 'torch threads of each CPU rank (0: its share of the cores)' }),
    batchSize: z.number().int().positive().meta({ description: 'examples per step', unit: 'sequences' }),
    learningRate: z.number().positive().meta({ description: 'peak learning rate of warmup + cosine' }),
    warmupSteps: steps('linear warmup length'),
    minLearningRateRatio: z
      .number()
      .min(0)
      .max(1)
      .meta({ description: 'the cosine ends at this share of the peak', unit: 'fraction 0–1' }),
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
    sequenceParallel: z
      .number()
      .int()
      .positive()
      .meta({ description: 'ranks that split each packed row (--sp)' }),
    cpuOffload: z.boolean().meta({ description: 'sharded state in host memory (GPU ranks)' }),
    maxSequenceTokens: z
      .number()
      .int()
      .positive()
      .meta({ description: 'longer examples are left out of the data', unit: 'tokens' }),
    evalProblems: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: 'held-out arith problems evaluated at the end (0: none)', unit: 'problems' }),
    evalConcurrency: z
      .number()
      .int()
      .positive()
      .meta({ description: 'trajectories in flight in that evaluation' }),
    evalMaxToolCalls: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: 'code calls a trajectory may make in that evaluation' }),
  })
  .strict();

/** What `config.json` of a `train sft` run holds. */
export type SftRunConfig = z.infer<typeof sftRunConfigSchema>;
