/**
 * The `Trainer` over the distributed trainer's HTTP service (`python -m agentmath_train serve`
 * under torchrun, rank 0 listening): batches go as the binary format of `trainer-batch.ts`,
 * everything else as JSON; every response is validated with zod and a failure names the route.
 * Beyond `Trainer` it exports the current weights in Hugging Face layout (`exportModel`).
 * Requests go over node:http (`long-request.ts`): the service answers a step, an export or a
 * broadcast only when done, later than undici's 300-s headers timeout for a large model. Each
 * waits `timeoutMs`, raised once the model's size is known (`state()`) to the rule of
 * `model-call-timeout.ts`; a timeout is an outage that says so, never a refusal.
 */
import { z } from 'zod';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { longRequest } from '../shared/long-request.ts';
import { modelBytes, modelCallTimeoutMs, TRAINER_BASE_MS } from './model-call-timeout.ts';
import { type BatchSequence, encodeTrainerBatch } from './trainer-batch.ts';
import type {
  GrpoStepRequest,
  GrpoStepResult,
  SftStepRequest,
  SftStepResult,
  Trainer,
  TrainerState,
} from './types.ts';

/** The distributed trainer answered with an error, an unexpected body, or not at all. */
export class DistributedTrainerError extends AgentMathError {
  readonly status: number | null;
  constructor(route: string, message: string, status: number | null, options?: { cause?: unknown }) {
    super('DISTRIBUTED_TRAINER_FAILED', `trainer ${route}: ${message}`, options);
    this.status = status;
  }
}

const stepSchema = z.object({
  loss: z.number(),
  tokens: z.number().int(),
  sequences: z.number().int(),
  batch_tokens: z.number().int(),
  grad_norm: z.number(),
  learning_rate: z.number(),
  skipped: z.boolean(),
  step_ms: z.number(),
  tokens_per_second: z.number(),
  policy_version: z.number().int(),
});
const grpoSchema = stepSchema.extend({
  clip_fraction: z.number(),
  mean_ratio: z.number(),
  approx_kl_old: z.number(),
  entropy: z.number(),
  updates: z.number().int(),
  kl_ref: z.number().optional(),
  dual_clip_fraction: z.number().optional(),
  off_policy_weight: z.number().optional(),
  off_policy_capped: z.number().optional(),
  logprob_gap_mean: z.number().optional(),
  logprob_gap_max: z.number().optional(),
  stale_logprob_gap_mean: z.number().optional(),
  stale_logprob_gap_max: z.number().optional(),
});
const stateSchema = z.object({
  policy_version: z.number().int(),
  optimizer_steps: z.number().int(),
  world_size: z.number().int(),
  model: z.string(),
  reference: z.string(),
  device: z.string(),
  compute_dtype: z.string(),
  threads: z.number().int(),
  omp_wait_policy: z.string(),
  parameters: z.number().int(),
  peak_memory_bytes: z.number().int(),
  baseline_memory_bytes: z.number().int(),
});
const transferSchema = z.object({
  sequences: z.number().int(),
  tokens: z.number().int(),
  decode_ms: z.number(),
});
const checkpointSchema = z.object({
  path: z.string().optional(),
  policy_version: z.number().int(),
  optimizer_restored: z.boolean().optional(),
});
const openGroupSchema = z.object({
  group_name: z.string(),
  master_port: z.number().int().positive(),
  buckets: z.array(
    z.object({
      names: z.array(z.string()),
      dtypes: z.array(z.string()),
      shapes: z.array(z.array(z.number().int().nonnegative())),
    }),
  ),
});
const broadcastSchema = z.object({
  buckets: z.number().int(),
  tensors: z.number().int(),
  bytes: z.number().int(),
  broadcast_ms: z.number(),
  policy_version: z.number().int(),
});
const scoreSchema = z.object({
  token_logprobs: z.array(z.array(z.number())),
  policy_version: z.number().int(),
});

/** One `/update_weights_from_distributed` call's tensors, as SGLang names its fields. */
export type WeightBucket = { names: string[]; dtypes: string[]; shapes: number[][] };

/** A step's statistics plus what the distributed trainer measures about itself. */
export type DistributedStepExtras = { batchTokens: number; tokensPerSecond: number };

/** What the service says about itself. */
export type DistributedTrainerState = TrainerState & {
  worldSize: number;
  model: string;
  reference: string;
  device: string;
  computeDtype: string;
  /** Torch threads of a rank, and its OpenMP wait policy (PASSIVE: idle threads sleep). */
  threads: number;
  ompWaitPolicy: string;
  parameters: number;
  /** The largest peak over ranks: accelerator allocator peak, or peak resident memory on CPU. */
  peakMemoryBytes: number;
  /** Resident memory before the model was built (CPU; 0 on GPU), to subtract from the peak. */
  baselineMemoryBytes: number;
};

function stepResult(parsed: z.infer<typeof stepSchema>): SftStepResult & DistributedStepExtras {
  return {
    loss: parsed.loss,
    tokens: parsed.tokens,
    sequences: parsed.sequences,
    gradNorm: parsed.grad_norm,
    learningRate: parsed.learning_rate,
    skipped: parsed.skipped,
    stepMs: parsed.step_ms,
    policyVersion: parsed.policy_version,
    batchTokens: parsed.batch_tokens,
    tokensPerSecond: parsed.tokens_per_second,
  };
}

/** Removes undefined values, so the header carries only what the caller chose. */
/** A gap the trainer reported as a mean and a max, or null where it had no token for it. */
function gapOf(mean: number | undefined, max: number | undefined): { mean: number; max: number } | null {
  return mean === undefined || max === undefined ? null : { mean, max };
}

function defined(options: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}

export class DistributedTrainerClient implements Trainer {
  readonly baseUrl: string;
  readonly #headers: Record<string, string>;
  #timeoutMs: number;
  /** Learning rate used when a request names none. */
  readonly #defaultLearningRate: number;

  constructor({
    baseUrl,
    token,
    timeoutMs = TRAINER_BASE_MS,
    defaultLearningRate = 1e-5,
  }: { baseUrl: string; token?: string; timeoutMs?: number; defaultLearningRate?: number }) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.#timeoutMs = timeoutMs;
    this.#defaultLearningRate = defaultLearningRate;
    this.#headers = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  }

  async sftStep(request: SftStepRequest): Promise<SftStepResult & DistributedStepExtras> {
    const batch = encodeTrainerBatch(request.sequences, {
      learningRate: request.learningRate ?? this.#defaultLearningRate,
    });
    return stepResult(parse(stepSchema, await this.#post('/sft_step', batch), '/sft_step'));
  }

  async grpoStep(request: GrpoStepRequest): Promise<GrpoStepResult & DistributedStepExtras> {
    const sequences: BatchSequence[] = request.sequences;
    const batch = encodeTrainerBatch(
      sequences,
      defined({
        learningRate: request.learningRate ?? this.#defaultLearningRate,
        clipEpsilonLow: request.clipEpsilonLow,
        clipEpsilonHigh: request.clipEpsilonHigh,
        klCoef: request.klCoef,
        klEstimator: request.klEstimator,
        aggregation: request.aggregation,
        dualClip: request.dualClip,
        proximal: request.proximal,
        offPolicyCap: request.offPolicyCap,
        offPolicyMode: request.offPolicyMode,
        offPolicyFloor: request.offPolicyFloor,
        temperature: request.temperature,
        miniBatches: request.miniBatches,
        epochs: request.epochs,
        referencePath: request.referencePath,
      }),
    );
    const parsed = parse(grpoSchema, await this.#post('/grpo_step', batch), '/grpo_step');
    return {
      ...stepResult(parsed),
      clipFraction: parsed.clip_fraction,
      meanRatio: parsed.mean_ratio,
      approxKlOld: parsed.approx_kl_old,
      entropy: parsed.entropy,
      klRef: parsed.kl_ref ?? null,
      dualClipFraction: parsed.dual_clip_fraction ?? null,
      offPolicyWeight: parsed.off_policy_weight ?? null,
      offPolicyCapped: parsed.off_policy_capped ?? null,
      logprobGap: gapOf(parsed.logprob_gap_mean, parsed.logprob_gap_max),
      staleLogprobGap: gapOf(parsed.stale_logprob_gap_mean, parsed.stale_logprob_gap_max),
      updates: parsed.updates,
    };
  }

  async score(inputIds: number[][]): Promise<{ tokenLogprobs: number[][]; policyVersion: number }> {
    const batch = encodeTrainerBatch(
      inputIds.map((ids) => ({ inputIds: ids, lossMask: ids.map(() => 0) })),
      {},
    );
    const parsed = parse(scoreSchema, await this.#post('/score', batch), '/score');
    return { tokenLogprobs: parsed.token_logprobs, policyVersion: parsed.policy_version };
  }

  /** A sharded (DCP) checkpoint of weights and optimizer, committed once every rank wrote. */
  async saveCheckpoint(path: string): Promise<{ path: string; policyVersion: number }> {
    const parsed = parse(
      checkpointSchema,
      await this.#postJson('/save_checkpoint', { path }),
      '/save_checkpoint',
    );
    return { path, policyVersion: parsed.policy_version };
  }

  async loadCheckpoint(path: string): Promise<{ policyVersion: number; optimizerRestored: boolean }> {
    const parsed = parse(
      checkpointSchema,
      await this.#postJson('/load_checkpoint', { path }),
      '/load_checkpoint',
    );
    return { policyVersion: parsed.policy_version, optimizerRestored: parsed.optimizer_restored ?? false };
  }

  /** The current weights in Hugging Face layout (safetensors, config, tokenizer files). */
  async exportModel(path: string): Promise<{ path: string; policyVersion: number }> {
    const parsed = parse(checkpointSchema, await this.#postJson('/export', { path }), '/export');
    return { path, policyVersion: parsed.policy_version };
  }

  /**
   * Rank 0 hosts a weight update group's rendezvous on a free port and plans the broadcast:
   * every parameter by Hugging Face name in buckets of at most `bucketBytes`.
   */
  async openWeightsUpdateGroup(request: {
    groupName: string;
    worldSize: number;
    backend: 'nccl' | 'gloo';
    dtype?: string;
    bucketBytes?: number;
  }): Promise<{ masterPort: number; buckets: WeightBucket[] }> {
    const parsed = parse(
      openGroupSchema,
      await this.#postJson(
        '/open_weights_update_group',
        defined({
          group_name: request.groupName,
          world_size: request.worldSize,
          backend: request.backend,
          dtype: request.dtype,
          bucket_bytes: request.bucketBytes,
        }),
      ),
      '/open_weights_update_group',
    );
    return { masterPort: parsed.master_port, buckets: parsed.buckets };
  }

  /** Rank 0 joins the group as its rank 0; resolves once every engine joined too. */
  async joinWeightsUpdateGroup(groupName: string): Promise<void> {
    await this.#postJson('/join_weights_update_group', { group_name: groupName });
  }

  /** Rank 0 leaves the group and destroys its side (nothing to do when it holds no such group). */
  async destroyWeightsUpdateGroup(groupName: string): Promise<void> {
    await this.#postJson('/destroy_weights_update_group', { group_name: groupName });
  }

  /** Broadcasts every parameter into the group, bucket by bucket, in the planned order. */
  async broadcastWeights(
    groupName: string,
  ): Promise<{ tensors: number; bytes: number; broadcastMs: number; policyVersion: number }> {
    const parsed = parse(
      broadcastSchema,
      await this.#postJson('/broadcast_weights', { group_name: groupName }),
      '/broadcast_weights',
    );
    return {
      tensors: parsed.tensors,
      bytes: parsed.bytes,
      broadcastMs: parsed.broadcast_ms,
      policyVersion: parsed.policy_version,
    };
  }

  async state(): Promise<DistributedTrainerState> {
    const parsed = parse(stateSchema, await this.#request('GET', '/state'), '/state');
    this.#timeoutMs = Math.max(
      this.#timeoutMs,
      modelCallTimeoutMs(modelBytes(parsed.parameters, parsed.compute_dtype), TRAINER_BASE_MS),
    );
    return {
      policyVersion: parsed.policy_version,
      optimizerSteps: parsed.optimizer_steps,
      running: 0,
      waiting: 0,
      worldSize: parsed.world_size,
      model: parsed.model,
      reference: parsed.reference,
      device: parsed.device,
      computeDtype: parsed.compute_dtype,
      threads: parsed.threads,
      ompWaitPolicy: parsed.omp_wait_policy,
      parameters: parsed.parameters,
      peakMemoryBytes: parsed.peak_memory_bytes,
      baselineMemoryBytes: parsed.baseline_memory_bytes,
    };
  }

  /** Sends an encoded batch that every rank only decodes: what moving a step's batch costs. */
  async transferProbe(batch: Buffer): Promise<{ sequences: number; tokens: number; decodeMs: number }> {
    const parsed = parse(transferSchema, await this.#post('/transfer_probe', batch), '/transfer_probe');
    return { sequences: parsed.sequences, tokens: parsed.tokens, decodeMs: parsed.decode_ms };
  }

  /** Stops every rank of the service. */
  async shutdown(): Promise<void> {
    await this.#postJson('/shutdown', {});
  }

  #post(route: string, body: Buffer): Promise<unknown> {
    return this.#request('POST', route, body, 'application/octet-stream');
  }

  #postJson(route: string, body: unknown): Promise<unknown> {
    return this.#request('POST', route, Buffer.from(JSON.stringify(body)), 'application/json');
  }

  /** The current wait of a request (the rule of `model-call-timeout.ts` once `state()` ran). */
  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  async #request(
    method: 'GET' | 'POST',
    route: string,
    body?: Buffer,
    contentType?: string,
  ): Promise<unknown> {
    const outcome = await longRequest({
      url: `${this.baseUrl}${route}`,
      method,
      headers: this.#headers,
      timeoutMs: this.#timeoutMs,
      ...(body === undefined ? {} : { body: new Uint8Array(body.buffer, body.byteOffset, body.byteLength) }),
      ...(contentType === undefined ? {} : { contentType }),
    });
    if (outcome.kind === 'timeout') {
      throw new DistributedTrainerError(
        route,
        `no answer from ${this.baseUrl} within ${Math.round(outcome.timeoutMs / 1000)} s (an outage: the trainer may still be working)`,
        null,
      );
    }
    if (outcome.kind === 'unreachable') {
      throw new DistributedTrainerError(
        route,
        `no answer from ${this.baseUrl} (${outcome.error.message})`,
        null,
        {
          cause: outcome.error,
        },
      );
    }
    const { status, text } = outcome;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new DistributedTrainerError(route, `answered ${status} with a body that is not JSON`, status);
    }
    if (status < 200 || status >= 300) {
      const message = (parsed as { error?: unknown }).error;
      throw new DistributedTrainerError(
        route,
        `answered ${status}: ${typeof message === 'string' ? message : text.slice(0, 300)}`,
        status,
      );
    }
    return parsed;
  }
}

function parse<T>(schema: z.ZodType<T>, body: unknown, route: string): T {
  const result = schema.safeParse(body);
  if (!result.success) {
    throw new DistributedTrainerError(
      route,
      `unexpected response: ${result.error.message.slice(0, 300)}`,
      200,
    );
  }
  return result.data;
}
