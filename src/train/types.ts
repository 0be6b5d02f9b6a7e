/**
 * The `Trainer` contract: what a training loop (SFT, GRPO) needs from whoever owns the policy
 * weights. `TrainerClient` implements it over the PyTorch worker's HTTP routes; a distributed
 * trainer would implement the same. Getting new weights to the engines is the engine side's
 * job (`WeightUpdatableEngine.updateWeightsFromDisk` in src/engine/types.ts).
 */

/** One training sequence: prompt + response ids, loss mask 1 on model tokens, 0 elsewhere. */
export type SftSequence = { inputIds: number[]; lossMask: number[] };
/** A GRPO sequence adds the group-normalised advantage and the sampling policy's logprobs
 * (one per input id; values where the loss mask is 0 are ignored). */
export type GrpoSequence = SftSequence & {
  advantage: number;
  oldLogprobs: number[];
  /** Per token, the policy versions between its sampler and the weights the step trains from (255: unknown). */
  policyLag?: number[];
};

export type SftStepRequest = { sequences: SftSequence[]; learningRate?: number };
export type GrpoStepRequest = {
  sequences: GrpoSequence[];
  learningRate?: number;
  /** ε_low and ε_high of the clipped ratio (default 0.2 each). */
  clipEpsilonLow?: number;
  clipEpsilonHigh?: number;
  /** β of the KL penalty to the frozen initial policy (default 0: no reference). */
  klCoef?: number;
} & GrpoObjectiveOptions;

/** The GRPO objective's choices (the worker's losses.py has the formulas, docs/rl.md the biases). */
export type GrpoObjectiveOptions = {
  /**
   * KL loss: k3 (default, π_ref/π_θ − log(π_ref/π_θ) − 1, ≥ 0) or k2 (½ (log π_θ − log π_ref)²).
   * k1 is not offered: on-policy its gradient has zero mean, so it regularises nothing.
   */
  klEstimator?: 'k3' | 'k2';
  /** token-mean (default: every token of the batch weighs the same) or sequence-mean. */
  aggregation?: 'token-mean' | 'sequence-mean';
  /** c > 1: a negative-advantage term is bounded below by c·Â (dual clip); default off. */
  dualClip?: number;
  /**
   * The ratio's anchor: `behaviour` (default: π_θ / π_behaviour, the engine's logprobs) or
   * `recompute` (decoupled: π_θ / π_prox with π_prox the trainer's weights before the step,
   * each token weighted once by π_prox / π_behaviour, capped at `offPolicyCap`).
   */
  proximal?: 'behaviour' | 'recompute';
  /** The cap of the off-policy weight (default 2). */
  offPolicyCap?: number;
  /** `truncate` (default: weight = min(w, cap)) or `mask` (tokens with w outside [floor, cap] get weight 0). */
  offPolicyMode?: 'truncate' | 'mask';
  /** The lower threshold of `mask` (default 0: none). */
  offPolicyFloor?: number;
  /** The engine's sampling temperature: the trainer's logprobs are of log_softmax(logits / T). */
  temperature?: number;
  /** PPO mini-batches per pass and passes over the batch (default 1 × 1: one update per step). */
  miniBatches?: number;
  epochs?: number;
  /** The KL reference's model folder (the run's `--model`); default the weights held at first use. */
  referencePath?: string;
};

export type SftStepResult = {
  loss: number;
  tokens: number;
  sequences: number;
  gradNorm: number;
  learningRate: number;
  skipped: boolean;
  stepMs: number;
  policyVersion: number;
};
export type GrpoStepResult = SftStepResult & {
  clipFraction: number;
  meanRatio: number;
  approxKlOld: number;
  entropy: number;
  klRef: number | null;
  /** Share of trained tokens whose term the dual clip bounded (null without dual clip). */
  dualClipFraction: number | null;
  /** Mean π_prox / π_behaviour before the cap, and the share above it (null unless decoupled). */
  offPolicyWeight: number | null;
  offPolicyCapped: number | null;
  /**
   * |engine logprob − trainer logprob| before any update (mean, max) over the trained tokens the
   * engine sampled with the weights the step trains from: engine and trainer's numeric mismatch.
   * null where no such token was trained.
   */
  logprobGap: { mean: number; max: number } | null;
  /** The same over trained tokens sampled by older weights: mismatch plus the policy's change since. */
  staleLogprobGap: { mean: number; max: number } | null;
  /** Optimizer updates applied in the step (mini-batches × epochs, less skipped ones). */
  updates: number;
};
/** What `/get_model_info` says about the served model. */
export type ServedModelInfo = {
  modelPath: string;
  contextLength: number;
  /** Parameter count when the worker reports it (the embedded model does). */
  parameters: number | null;
  /** The model's description as served (the embedded model's config keys), for reports. */
  model: Record<string, unknown>;
};

export type TrainerState = {
  policyVersion: number;
  optimizerSteps: number;
  running: number;
  waiting: number;
};

export interface Trainer {
  /** One SFT step: cross-entropy on tokens with loss mask 1. */
  sftStep(request: SftStepRequest): Promise<SftStepResult>;
  /** One GRPO step on group-normalised advantages, tool tokens masked. */
  grpoStep(request: GrpoStepRequest): Promise<GrpoStepResult>;
  /** Per-token log-probabilities of the current policy. */
  score(inputIds: number[][]): Promise<{ tokenLogprobs: number[][]; policyVersion: number }>;
  saveCheckpoint(path: string): Promise<{ path: string; policyVersion: number }>;
  loadCheckpoint(path: string): Promise<{ policyVersion: number; optimizerRestored: boolean }>;
  state(): Promise<TrainerState>;
}

/** Where a run's scalars go besides metrics.jsonl (`--logger`, src/train/metrics-logger.ts). */
export type MetricsLogger = {
  /** Where the logger writes (the event file's folder; wandb's run folder), for the user. */
  readonly location: string;
  /** One call per step; scalars are flat (`metricScalars` makes them from a metrics row). */
  log(step: number, scalars: Record<string, number>): Promise<void> | void;
  /** Flushes and finishes the run (the wandb sidecar exits); a second call does nothing. */
  close(): Promise<void>;
};
