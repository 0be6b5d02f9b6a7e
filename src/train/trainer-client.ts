/**
 * Client for the trainer routes of the embedded PyTorch worker: SFT and GRPO steps on the
 * served weights, per-token scoring, checkpoints, and SGLang's `/update_weights_from_disk`.
 * Requests are typed in camelCase and sent in the worker's snake_case wire format; every
 * response is validated with zod, so a mismatched worker fails loudly with the route named.
 * The losses themselves are documented in docs/embedded-model.md.
 */
import { z } from 'zod';
import { AgentMathError } from '../shared/agentmath-error.ts';
import type {
  GrpoStepRequest,
  GrpoStepResult,
  ServedModelInfo,
  SftSequence,
  SftStepRequest,
  SftStepResult,
  Trainer,
  TrainerState,
} from './types.ts';

export type {
  GrpoObjectiveOptions,
  GrpoSequence,
  GrpoStepRequest,
  GrpoStepResult,
  ServedModelInfo,
  SftSequence,
  SftStepRequest,
  SftStepResult,
  TrainerState,
} from './types.ts';

/** The trainer answered with an error, an unexpected body, or not at all. */
export class TrainerRequestError extends AgentMathError {
  readonly status: number | null;
  constructor(route: string, message: string, status: number | null, options?: { cause?: unknown }) {
    super('TRAINER_REQUEST_FAILED', `${route}: ${message}`, options);
    this.status = status;
  }
}

const stepCommon = {
  loss: z.number(),
  tokens: z.number().int(),
  sequences: z.number().int(),
  grad_norm: z.number(),
  learning_rate: z.number(),
  skipped: z.boolean(),
  step_ms: z.number(),
  policy_version: z.number().int(),
};

const sftStepSchema = z.object(stepCommon);
const grpoStepSchema = z.object({
  ...stepCommon,
  clip_fraction: z.number(),
  mean_ratio: z.number(),
  approx_kl_old: z.number(),
  entropy: z.number(),
  kl_ref: z.number().optional(),
  dual_clip_fraction: z.number().optional(),
  off_policy_weight: z.number().optional(),
  off_policy_capped: z.number().optional(),
  updates: z.number().int().optional(),
});
const scoreSchema = z.object({
  token_logprobs: z.array(z.array(z.number())),
  policy_version: z.number().int(),
});
const checkpointSchema = z.object({
  success: z.literal(true),
  path: z.string(),
  policy_version: z.number().int(),
  optimizer_restored: z.boolean().optional(),
});
const updateWeightsSchema = z.object({ success: z.boolean(), message: z.string() });
const modelInfoSchema = z.object({
  model_path: z.string(),
  context_length: z.number().int().positive(),
  policy_version: z.number().int().optional(),
  model: z.object({ parameters: z.number().int().optional() }).passthrough().optional(),
});
const stateSchema = z.object({
  policy_version: z.number().int(),
  optimizer_steps: z.number().int(),
  engine: z.object({ running: z.number().int(), waiting: z.number().int(), decode_steps: z.number().int() }),
});

/** Typed access to a worker's training routes. */
export class TrainerClient implements Trainer {
  readonly baseUrl: string;
  readonly #timeoutMs: number;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof fetch;

  /**
   * `apiKey`: the worker's key (`engine serve --api-key`), sent as a bearer token. `fetch`:
   * the HTTP client (default the global one), for a proxy or for recording what is sent.
   */
  constructor({
    baseUrl,
    timeoutMs = 600_000,
    apiKey,
    fetch: fetchImpl = fetch,
  }: { baseUrl: string; timeoutMs?: number; apiKey?: string; fetch?: typeof fetch }) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.#timeoutMs = timeoutMs;
    this.#fetch = fetchImpl;
    this.#headers = {
      'Content-Type': 'application/json',
      ...(apiKey === undefined ? {} : { Authorization: `Bearer ${apiKey}` }),
    };
  }

  /** One SFT step: cross-entropy on tokens with loss mask 1. */
  async sftStep(request: SftStepRequest): Promise<SftStepResult> {
    const body = await this.#post('/train/sft_step', {
      sequences: request.sequences.map(wireSequence),
      learning_rate: request.learningRate,
    });
    return stepResult(parse(sftStepSchema, body, '/train/sft_step'));
  }

  /** One GRPO step (clipped policy gradient, token-level normalisation, optional KL). */
  async grpoStep(request: GrpoStepRequest): Promise<GrpoStepResult> {
    const body = await this.#post('/train/grpo_step', {
      sequences: request.sequences.map((sequence) => ({
        ...wireSequence(sequence),
        advantage: sequence.advantage,
        old_logprobs: sequence.oldLogprobs,
      })),
      learning_rate: request.learningRate,
      clip_epsilon_low: request.clipEpsilonLow,
      clip_epsilon_high: request.clipEpsilonHigh,
      kl_coef: request.klCoef,
      kl_estimator: request.klEstimator,
      aggregation: request.aggregation,
      dual_clip: request.dualClip,
      proximal: request.proximal,
      off_policy_cap: request.offPolicyCap,
      off_policy_mode: request.offPolicyMode,
      off_policy_floor: request.offPolicyFloor,
      temperature: request.temperature,
      mini_batches: request.miniBatches,
      epochs: request.epochs,
      reference_path: request.referencePath,
    });
    const parsed = parse(grpoStepSchema, body, '/train/grpo_step');
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
      logprobGap: null,
      updates: parsed.updates ?? (parsed.skipped ? 0 : 1),
    };
  }

  /** log π(x_t | x_<t) for every token of each sequence (0 at position 0), current weights. */
  async score(inputIds: number[][]): Promise<{ tokenLogprobs: number[][]; policyVersion: number }> {
    const parsed = parse(
      scoreSchema,
      await this.#post('/train/score', { input_ids: inputIds }),
      '/train/score',
    );
    return { tokenLogprobs: parsed.token_logprobs, policyVersion: parsed.policy_version };
  }

  /** Writes a model folder (weights, config, tokenizer files, optimizer, policy version). */
  async saveCheckpoint(path: string): Promise<{ path: string; policyVersion: number }> {
    const parsed = parse(
      checkpointSchema,
      await this.#post('/train/save_checkpoint', { path }),
      '/train/save_checkpoint',
    );
    return { path: parsed.path, policyVersion: parsed.policy_version };
  }

  /** Restores weights, optimizer state and policy version from a saved folder. */
  async loadCheckpoint(path: string): Promise<{ policyVersion: number; optimizerRestored: boolean }> {
    const parsed = parse(
      checkpointSchema,
      await this.#post('/train/load_checkpoint', { path }),
      '/train/load_checkpoint',
    );
    return { policyVersion: parsed.policy_version, optimizerRestored: parsed.optimizer_restored ?? false };
  }

  /** SGLang's weight sync route; a failed load is a value (`success: false`), as SGLang reports it. */
  async updateWeightsFromDisk(modelPath: string): Promise<{ success: boolean; message: string }> {
    const body = await this.#post('/update_weights_from_disk', { model_path: modelPath });
    return parse(updateWeightsSchema, body, '/update_weights_from_disk');
  }

  /** SGLang's `/get_model_info`: the served model's path, context length and shape. */
  async modelInfo(): Promise<ServedModelInfo> {
    const parsed = parse(modelInfoSchema, await this.#request('GET', '/get_model_info'), '/get_model_info');
    return {
      modelPath: parsed.model_path,
      contextLength: parsed.context_length,
      parameters: parsed.model?.parameters ?? null,
      model: parsed.model ?? {},
    };
  }

  async state(): Promise<TrainerState> {
    const parsed = parse(stateSchema, await this.#request('GET', '/train/state'), '/train/state');
    return {
      policyVersion: parsed.policy_version,
      optimizerSteps: parsed.optimizer_steps,
      running: parsed.engine.running,
      waiting: parsed.engine.waiting,
    };
  }

  #post(route: string, body: unknown): Promise<unknown> {
    return this.#request('POST', route, body);
  }

  async #request(method: 'GET' | 'POST', route: string, body?: unknown): Promise<unknown> {
    let response: Response;
    try {
      response = await this.#fetch(`${this.baseUrl}${route}`, {
        method,
        headers: this.#headers,
        signal: AbortSignal.timeout(this.#timeoutMs),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new TrainerRequestError(
        route,
        `cannot reach ${this.baseUrl} (${(error as Error).message})`,
        null,
        {
          cause: error,
        },
      );
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      throw new TrainerRequestError(
        route,
        `HTTP ${response.status}, body is not JSON: ${text.slice(0, 200)}`,
        response.status,
      );
    }
    // SGLang answers a refused weight load with 400 and { success: false, message }: a value.
    if (response.status === 400 && (parsed as { success?: unknown } | null)?.success === false) return parsed;
    if (!response.ok) {
      const message = (parsed as { error?: { message?: unknown } } | null)?.error?.message;
      throw new TrainerRequestError(
        route,
        `HTTP ${response.status}: ${String(message ?? text.slice(0, 200))}`,
        response.status,
      );
    }
    return parsed;
  }
}

function wireSequence(sequence: SftSequence): { input_ids: number[]; loss_mask: number[] } {
  return { input_ids: sequence.inputIds, loss_mask: sequence.lossMask };
}

function stepResult(parsed: z.infer<typeof sftStepSchema>): SftStepResult {
  return {
    loss: parsed.loss,
    tokens: parsed.tokens,
    sequences: parsed.sequences,
    gradNorm: parsed.grad_norm,
    learningRate: parsed.learning_rate,
    skipped: parsed.skipped,
    stepMs: parsed.step_ms,
    policyVersion: parsed.policy_version,
  };
}

function parse<T>(schema: z.ZodType<T>, body: unknown, route: string): T {
  const result = schema.safeParse(body);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new TrainerRequestError(
      route,
      `unexpected response: ${issue?.path.join('.') || '(body)'}: ${issue?.message}`,
      200,
    );
  }
  return result.data;
}
