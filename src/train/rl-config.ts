/**
 * The validated configuration of `train rl` (strict: a misspelt key is an error). Defaults are
 * sized for the embedded model on a 2-core CPU; docs/rl.md gives each one's reason.
 */
import { z } from 'zod';
import { DEFAULT_SKIP_RULE } from '../rollout/index.ts';
import { MAX_LOCAL_WORKERS, SANDBOX_MODULE_NAME } from '../sandbox/index.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { ARITH_MAX_LEVEL } from '../tasks/index.ts';

const positive = z.number().int().positive();

export const rlConfigSchema = z
  .object({
    task: z.literal('arith').default('arith'),
    /**
     * The model folder RL starts from (`--model`): any model in Hugging Face layout, the byte
     * model included (an SFT output, e.g. .agentmath/models/arith-tool/model).
     */
    init: z.string().min(1),
    /** Training problems from a file (JSONL / Parquet, eval's loader), or a benchmark by name; null: the arith task. */
    data: z.string().min(1).nullable().default(null),
    bench: z.string().min(1).nullable().default(null),
    /** Leave out training problems that share an n-gram with the benchmark sets. */
    decontaminate: z.boolean().default(true),
    /** Held-out evaluation set (eval's loader); null: arith held-out problems. */
    evalBench: z.string().min(1).nullable().default(null),
    /** How a problem becomes the prompt (null: what the model declares, training-prompt.json, else instructed). */
    prompt: z.enum(['instructed', 'text-only', 'problem-only']).nullable().default(null),
    /** The code-block markup of prompts and rollouts (null: what the model declares, else tags). */
    dialect: z.enum(['tags', 'markdown']).nullable().default(null),
    /** Prompt + response token budget of a trajectory (null: the model's context length). */
    maxTokens: positive.nullable().default(null),
    /** Engine replicas: URLs of SGLang servers (empty: start `replicas` embedded ones). */
    engines: z.array(z.string().url()).default([]),
    api: z.enum(['sglang', 'vllm']).default('sglang'),
    router: z.enum(['round-robin', 'least-requests', 'prefix-aware', 'cache-aware']).default('prefix-aware'),
    replicas: positive.default(1),
    /** Requests in flight per replica. */
    maxInFlight: positive.default(32),
    /** The distributed trainer's URL (null: start it here with `trainerProcs` processes). */
    trainerUrl: z.string().url().nullable().default(null),
    trainerProcs: positive.default(1),
    microBatchTokens: positive.default(4096),
    /** The trainer started here: activation checkpointing per decoder layer. */
    activationCheckpointing: z.boolean().default(false),
    /** The trainer started here: tokens per LM-head chunk when it scores (0: full [T × V] logits; null: the trainer's choice by vocabulary, 512 from 32k tokens up). */
    logitsChunkTokens: z.number().int().nonnegative().nullable().default(null),
    /** The trainer started here: GiB one rank may hold (0: the device's memory); a step estimated above it is refused before it runs. */
    memoryLimitGb: z.number().nonnegative().default(0),
    /** The trainer started here: ranks that split each packed row (sequence parallelism); divides `trainerProcs`. */
    sequenceParallel: positive.default(1),
    /** The trainer started here: sharded parameters, gradients and optimizer state in host memory (GPU ranks; nothing changes on CPU ranks). */
    cpuOffload: z.boolean().default(false),
    /** Sandbox node URLs (empty: a local jailed sandbox). */
    sandboxes: z.array(z.string().url()).default([]),
    /** Trainer steps the rollout may run ahead (0: synchronous; 1: the next batch is generated while this one trains). */
    maxStaleness: z.number().int().nonnegative().default(0),
    /** How new weights reach the engines. */
    weightSync: z.enum(['disk', 'distributed']).default('disk'),
    /** `distributed`: the trainer's address as the engines reach it (null: found, `weight-sync-address.ts`). */
    weightSyncAddress: z.string().min(1).nullable().default(null),
    /** Text RL: the policy cannot run code (tool-call budget 0; a code block ends the trajectory). */
    textOnly: z.boolean().default(false),
    steps: positive.default(40),
    /** B: GRPO groups kept (trained on) per step. */
    batchSize: positive.default(8),
    /** n: trajectories per problem. */
    groupSize: positive.default(8),
    /** null: from the model's size (`rl-learning-rate.ts`). */
    learningRate: z.number().positive().nullable().default(null),
    clipEpsilonLow: z.number().min(0).default(0.2),
    clipEpsilonHigh: z.number().min(0).default(0.28),
    /** β of the KL penalty to the initial policy (`init`, also after a resume); 0 = off. */
    klCoef: z.number().min(0).default(0),
    /** The KL loss: k3 or k2 (k1's gradient has zero mean on-policy, so it is not offered). */
    klEstimator: z.enum(['k3', 'k2']).default('k3'),
    /** The reward: `composite` (R_acc + the code-call bonus) or `accuracy` (R_acc only). */
    reward: z.enum(['composite', 'accuracy']).default('composite'),
    /** α, β, R_max of the composite reward's bonus min(R_max, α + β·N_code) on a right answer. */
    toolRewardAlpha: z.number().min(0).default(0.1),
    toolRewardBeta: z.number().min(0).default(0.02),
    toolRewardMax: z.number().min(0).default(0.2),
    /** PPO mini-batches per step (each an optimizer update) and passes over the step's batch. */
    miniBatches: positive.default(1),
    epochs: positive.default(1),
    /** Group advantage: (r − mean)/std (GRPO) or r − mean (Dr. GRPO). */
    advantage: z.enum(['std', 'mean-only']).default('std'),
    /** Loss aggregation: each token of the batch weighs the same, or each sequence does. */
    aggregation: z.enum(['token-mean', 'sequence-mean']).default('token-mean'),
    /** Dual clip constant c > 1 (null = off). */
    dualClip: z.number().gt(1).nullable().default(null),
    /**
     * Ratio anchor: the trainer's recompute (decoupled objective; on a GPU the engine's bf16
     * logprobs are not the trainer's, so the clip would act on numeric noise), or the engine's.
     */
    proximal: z.enum(['behaviour', 'recompute']).default('recompute'),
    /**
     * The correction of the engine-vs-trainer mismatch by w = π_prox / π_engine (recompute
     * only): `tis` truncates w at the upper threshold, `mis` drops tokens with w outside
     * [lower, upper] (verl's rollout correction, token level; slime's `--use-tis`).
     */
    rolloutCorrection: z.enum(['tis', 'mis']).default('tis'),
    rolloutIsThreshold: z.number().min(1).default(2),
    /** `mis`'s lower threshold (null: 1 / the upper one, as verl). */
    rolloutIsThresholdLower: z.number().positive().max(1).nullable().default(null),
    /** Leave trajectories cut by a budget out of the loss. */
    maskTruncated: z.boolean().default(false),
    /** Leave trajectories whose last turn had neither code nor an answer out of the loss. */
    maskVoid: z.boolean().default(false),
    /** Held-out evaluation every K steps (0 = only at the end). */
    evalEvery: z.number().int().nonnegative().default(10),
    /**
     * The trainer's resume checkpoint every K steps (and after the last); a resume redoes the
     * steps since the newest. null: by the model's size (rl-run.ts).
     */
    checkpointEvery: positive.nullable().default(null),
    /** Checkpoints kept (the newest; older ones this run wrote are deleted). */
    keepCheckpoints: positive.default(2),
    evalProblems: positive.default(80),
    /** Difficulty levels RL problems are drawn from. */
    levels: z.array(z.number().int().min(0).max(ARITH_MAX_LEVEL)).min(1).default([1, 2, 3, 4]),
    /** Training problems in the pool, cycled over in order. */
    problemPool: positive.default(4000),
    temperature: z.number().min(0).default(1),
    maxToolCalls: z.number().int().nonnegative().default(4),
    /** N partial rollouts per trajectory (L_seg = context / N). */
    partialRollouts: positive.default(2),
    mode: z.enum(['async', 'sync']).default('async'),
    seed: z.number().int().nonnegative().default(0),
    /** Pre-rollout skipping from `problem-history.jsonl` (GRESO); p, q and e of `skip-rule.ts`. */
    skipHistory: z.boolean().default(false),
    skipBase: z.number().min(0).max(1).default(DEFAULT_SKIP_RULE.base),
    skipMax: z.number().min(0).max(1).default(DEFAULT_SKIP_RULE.max),
    explore: z.number().min(0).max(1).default(DEFAULT_SKIP_RULE.explore),
    /** Resample-on-correct K: sample K · n per group, keep n (rStar2-Agent's GRPO-RoC); 1 = off. */
    resampleOnCorrect: z.number().min(1).max(8).default(1),
    /** Torch threads of each trainer rank started here (0: its share of the cores). */
    trainThreads: z.number().int().nonnegative().default(0),
    /**
     * Jailed workers of the local sandbox (a worker serves one trajectory's session); null: one
     * per request the engines may have in flight (maxInFlight × replicas, at most the pool's
     * 256), so no trajectory waits for a worker while its turn's tokens are ready (with 8 for
     * 32 in flight, a level-5 rollout's tool call waited 3.2 s at the median). Sessions parked
     * by partial rollouts hold a worker too.
     */
    sandboxWorkers: positive.max(MAX_LOCAL_WORKERS).nullable().default(null),
    /**
     * Modules a local sandbox worker imports before its session; null: the sandbox's default
     * (SymPy, NumPy, SciPy). A worker serves one trajectory, so on a CPU-bound machine each
     * import a session never uses costs its trajectory about half a second of a core.
     */
    sandboxPreload: z.array(z.string().regex(SANDBOX_MODULE_NAME)).nullable().default(null),
  })
  .strict();

export type RlConfig = z.infer<typeof rlConfigSchema>;
export type RlConfigInput = z.input<typeof rlConfigSchema>;

export class RlConfigError extends AgentMathError {
  constructor(message: string) {
    super('RL_CONFIG_INVALID', message);
  }
}

export function resolveRlConfig(input: unknown): RlConfig {
  const parsed = rlConfigSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.join('.') || '(root)';
  throw new RlConfigError(`RL config field "${field}": ${issue?.message ?? 'invalid'}`);
}
