/**
 * The validated configuration of an SFT run (zod, strict: a misspelt key is an error).
 * Defaults are the embedded default: the `tiny` model on arith levels 1–4, sized so the tool
 * model trains in about five minutes on two CPU cores. The resolved configuration is saved
 * in the run's state file, and a resumed run uses the saved one.
 */
import { z } from 'zod';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { ARITH_MAX_LEVEL } from '../tasks/index.ts';

const positive = z.number().int().positive();

export const sftConfigSchema = z
  .object({
    task: z.literal('arith').default('arith'),
    /** `tool`: tool-augmented solutions (code really run in the sandbox); `text`: text only. */
    style: z.enum(['tool', 'text']).default('tool'),
    /** The worker's preset to train from scratch. */
    model: z.string().min(1).default('tiny'),
    /** Initial-weights seed of the preset; also seeds the data order. */
    seed: z.number().int().default(1),
    steps: positive.default(800),
    batchSize: positive.default(8),
    learningRate: z.number().positive().default(5e-3),
    warmupSteps: z.number().int().nonnegative().default(30),
    /** The cosine decays to this fraction of the peak. */
    minLearningRateRatio: z.number().min(0).max(1).default(0.1),
    /** Wall-clock cap on training (excluding data and eval); absent = run all steps. */
    maxMinutes: z.number().positive().optional(),
    /** Training problems generated (one solution each). */
    trainProblems: positive.default(8000),
    levels: z.array(z.number().int().min(0).max(ARITH_MAX_LEVEL)).min(1).default([1, 2, 3, 4]),
    checkpointEvery: positive.default(100),
    /**
     * Torch threads for training steps; 0 = the worker's default (all cores). One by default:
     * on a shared machine a second OpenMP thread waiting for a busy core made steps 2.5x slower.
     */
    trainThreads: z.number().int().nonnegative().default(1),
    evalProblems: z.number().int().nonnegative().default(160),
    evalConcurrency: positive.default(32),
    evalMaxToolCalls: z.number().int().nonnegative().default(4),
    /** Train on this file (trajectories.jsonl, sharegpt.json or verl.parquet) instead of generated solutions. */
    dataFile: z.string().min(1).nullable().default(null),
    /**
     * Text style only: this share of the problems (chosen by a hash of the problem id) gets its
     * tool-augmented solution instead, so the model knows the tool but rarely calls it (the
     * base model of the ZeroTIR experiment). 0 = text only.
     */
    toolShare: z.number().min(0).max(1).default(0),
    /** Interpreter output is masked from the loss (false trains on it too: the ablation's baseline). */
    maskToolOutput: z.boolean().default(true),
  })
  .strict();

export type SftConfig = z.infer<typeof sftConfigSchema>;
export type SftConfigInput = z.input<typeof sftConfigSchema>;

/** Bad SFT configuration; the message names the field. */
export class SftConfigError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SFT_CONFIG_INVALID', message, options);
  }
}

/** Validates and fills in defaults; `source` names where the values came from in errors. */
export function resolveSftConfig(input: unknown, source = 'SFT config'): SftConfig {
  const parsed = sftConfigSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new SftConfigError(`${source}: "${issue?.path.join('.') || '(root)'}": ${issue?.message}`, {
      cause: parsed.error,
    });
  }
  if (parsed.data.toolShare > 0 && parsed.data.style !== 'text') {
    throw new SftConfigError(
      `${source}: "toolShare" mixes tool solutions into text data; it needs style "text" (--text-only)`,
    );
  }
  return parsed.data;
}
