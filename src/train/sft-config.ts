/**
 * The validated configuration of an SFT run, for every model (zod, strict: a misspelt key is an
 * error). What is trained: `model` (a Hugging Face folder; null: a new byte model that the run
 * initialises, `model init --arch byte-gpt`, the embedded default) on `data` (a data file;
 * null: arith solutions the run writes, tool-augmented or text-only, in the run's dialect).
 * Fields left null are decided by the model when the run starts (`resolveSftDefaults`): a
 * model trained from scratch (one `model init` wrote) takes the from-scratch rate 5e-3 and 30
 * warmup steps; a pretrained one is fine-tuned at 5e-5 with a tenth of the steps as warmup (at
 * most 30); the prompt and dialect are the ones the model declares (`training-prompt.json`),
 * else instructed in tags; the longest sequence is the model's context. The resolved
 * configuration is the run's identity in `DIR/config.json`; a resume must match it, except
 * the fields that size or place the run.
 */
import { z } from 'zod';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { ARITH_MAX_LEVEL } from '../tasks/index.ts';

const positive = z.number().int().positive();

export const sftConfigSchema = z
  .object({
    /** The model folder trained from; null: a new byte model in `DIR/init-model`. */
    model: z.string().min(1).nullable().default(null),
    /** A data file (trajectories.jsonl, sharegpt.json, verl.parquet, a `tasks write-arith` JSONL); null: generated. */
    data: z.string().min(1).nullable().default(null),
    task: z.literal('arith').default('arith'),
    /** Generated data: `tool` (code really run in the jailed sandbox) or `text` solutions. */
    style: z.enum(['tool', 'text']).default('tool'),
    /** Generated data: problems written (one solution each). */
    trainProblems: positive.default(8000),
    levels: z.array(z.number().int().min(0).max(ARITH_MAX_LEVEL)).min(1).default([1, 2, 3, 4]),
    /**
     * Generated data: problems per level in each turn of the rotation, one positive whole number
     * per level; null: one each (every level the same share). `[3, 3, 3, 3, 1]` on levels 1–5
     * covers level 5 thinly (1 problem in 13).
     */
    levelWeights: z.array(positive).min(1).nullable().default(null),
    /**
     * Generated text data only: this share of the problems (chosen by a hash of the problem id)
     * gets its tool-augmented solution instead, so the model knows the tool but rarely calls
     * it (the base model of the ZeroTIR experiment). 0 = text only.
     */
    toolShare: z.number().min(0).max(1).default(0),
    /** Interpreter output is masked from the loss (false trains on it too: the ablation's baseline). */
    maskToolOutput: z.boolean().default(true),
    /** The code-block markup of the prompt and the data; null: what the model declares, else tags. */
    dialect: z.enum(['tags', 'markdown']).nullable().default(null),
    /** How a problem becomes the prompt; null: what the model declares, else instructed. */
    prompt: z.enum(['instructed', 'text-only', 'problem-only']).nullable().default(null),
    seed: z.number().int().default(1),
    /** The run's length in optimizer steps (a resume may change it). */
    steps: positive.default(800),
    /** This session's training-time budget in minutes (a resume may change it); null: none. */
    maxMinutes: z.number().positive().nullable().default(null),
    batchSize: positive.default(8),
    /** Peak learning rate of warmup + cosine; null: by how the model was made (see the header). */
    learningRate: z.number().positive().nullable().default(null),
    warmupSteps: z.number().int().nonnegative().nullable().default(null),
    /** The cosine decays to this fraction of the peak. */
    minLearningRateRatio: z.number().min(0).max(1).default(0.1),
    checkpointEvery: positive.default(100),
    /** Trainer ranks (torchrun; one rank runs without it). */
    processes: positive.default(1),
    /**
     * Torch threads of each CPU rank; 0 = its share of the cores. The quickstart trains two
     * models side by side on two cores, one thread each: on a shared machine a second OpenMP
     * thread waiting for a busy core made steps 2.5x slower.
     */
    threads: z.number().int().nonnegative().default(0),
    microBatchTokens: z.number().int().min(16).default(8192),
    activationCheckpointing: z.boolean().default(false),
    /** Ranks that split each packed row (sequence parallelism); divides `processes`. */
    sequenceParallel: positive.default(1),
    /** Sharded state in host memory (GPU ranks; nothing changes on CPU ranks). */
    cpuOffload: z.boolean().default(false),
    /** Longer examples are left out; null: the model's context length. */
    maxSequenceTokens: z.number().int().min(16).nullable().default(null),
    /** Held-out arith problems evaluated through the agent loop at the end (0: none). */
    evalProblems: z.number().int().nonnegative().default(160),
    evalConcurrency: positive.default(32),
    evalMaxToolCalls: z.number().int().nonnegative().default(4),
  })
  .strict();

export type SftConfig = z.infer<typeof sftConfigSchema>;
export type SftConfigInput = z.input<typeof sftConfigSchema>;

/** A configuration with every model-decided field filled in (the run's identity). */
export type ResolvedSftConfig = Omit<
  SftConfig,
  'model' | 'dialect' | 'prompt' | 'learningRate' | 'warmupSteps' | 'maxSequenceTokens'
> & {
  model: string;
  dialect: 'tags' | 'markdown';
  prompt: 'instructed' | 'text-only' | 'problem-only';
  learningRate: number;
  warmupSteps: number;
  maxSequenceTokens: number;
};

/** Bad SFT configuration; the message names the field. */
export class SftConfigError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SFT_CONFIG_INVALID', message, options);
  }
}

/** Peak learning rate of a model trained from scratch (the byte model's, tuned on arith). */
export const FROM_SCRATCH_LEARNING_RATE = 5e-3;
/**
 * Peak learning rate of a pretrained model: the Hugging Face Trainer's own default
 * (`TrainingArguments.learning_rate`), 100× below the from-scratch rate: steps the size of a
 * from-scratch rate undo what pretraining learned (docs/training.md).
 */
export const FINE_TUNING_LEARNING_RATE = 5e-5;

/** Validates and fills in the schema's defaults; `source` names where the values came from in errors. */
export function resolveSftConfig(input: unknown, source = 'SFT config'): SftConfig {
  const parsed = sftConfigSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new SftConfigError(`${source}: "${issue?.path.join('.') || '(root)'}": ${issue?.message}`, {
      cause: parsed.error,
    });
  }
  const config = parsed.data;
  if (config.toolShare > 0 && config.style !== 'text') {
    throw new SftConfigError(
      `${source}: "toolShare" mixes tool solutions into text data; it needs style "text" (--text-only)`,
    );
  }
  if (config.levelWeights !== null && config.levelWeights.length !== config.levels.length) {
    throw new SftConfigError(
      `${source}: "levelWeights" has ${config.levelWeights.length} weights for ${config.levels.length} levels; give one per level`,
    );
  }
  if (config.processes % config.sequenceParallel !== 0) {
    throw new SftConfigError(
      `${source}: "sequenceParallel" ${config.sequenceParallel} must divide "processes" ${config.processes}`,
    );
  }
  return config;
}

/** What the model folder says of itself, for the defaults it decides. */
export type ModelFacts = {
  folder: string;
  /** `model init` wrote it: trained from scratch. */
  fromScratch: boolean;
  contextTokens: number;
  declared: { prompt?: ResolvedSftConfig['prompt']; dialect?: ResolvedSftConfig['dialect'] } | null;
};

/** The configuration with the model-decided fields filled in from `facts`. */
export function resolveSftDefaults(config: SftConfig, facts: ModelFacts): ResolvedSftConfig {
  return {
    ...config,
    model: facts.folder,
    dialect: config.dialect ?? facts.declared?.dialect ?? 'tags',
    prompt: config.prompt ?? facts.declared?.prompt ?? 'instructed',
    learningRate:
      config.learningRate ?? (facts.fromScratch ? FROM_SCRATCH_LEARNING_RATE : FINE_TUNING_LEARNING_RATE),
    warmupSteps: config.warmupSteps ?? (facts.fromScratch ? 30 : Math.min(30, Math.ceil(config.steps / 10))),
    // Never past the model's context, whatever --max-sequence-tokens says.
    maxSequenceTokens: Math.min(config.maxSequenceTokens ?? facts.contextTokens, facts.contextTokens),
  };
}
