/**
 * Client for vLLM's OpenAI-compatible `POST /v1/completions` with the prompt given as token
 * ids. Asks for `return_token_ids` (choices[].token_ids) and `logprobs: 0` with
 * `return_tokens_as_token_ids` (logprobs.tokens as "token_id:N", the fallback for ids on
 * servers without return_token_ids), and `include_stop_str_in_output`. The matched stop comes
 * from choices[0].stop_reason (a string, a token id, or null for EOS); finish_reason is
 * 'stop' | 'length' | 'abort'. Asks for `return_weight_versions` too: the policy version of a
 * response is its first span's `version` (the oldest weights that sampled any of its tokens).
 *
 * A weight update through the routes vLLM 0.33.0 serves with `VLLM_SERVER_DEV_MODE=1`
 * (`vllm/entrypoints/rl/online/api_router.py`, `vllm/entrypoints/serve/dev/`; docs/engines.md):
 * `POST /pause?mode=abort` (in-flight requests answer `finish_reason: abort` with their tokens;
 * vLLM refuses new ones with 503 until `/resume`, so this client holds its own new requests
 * until it resumes the server), `POST /reset_prefix_cache` (`{success}`: false while blocks are
 * held), `POST /collective_rpc {method: "reload_weights", kwargs: {weights_path}}` (every worker
 * reloads in place from the folder), `POST /update_weight_version {new_version}`,
 * `GET /weight_info`, `POST /resume`.
 */
import { z } from 'zod';
import { EngineBadRequestError, EngineBadResponseError, EngineHttpError } from './engine-errors.ts';
import type { JsonHttpClient } from './json-http-client.ts';
import { abortedResult, parseResponseBody, policyVersionFrom, safeJson } from './response-parsing.ts';
import type { PauseMode } from './sglang-engine.ts';
import type { GenerateRequest, GenerateResult, WeightUpdatableEngine, WeightUpdateResult } from './types.ts';

export type VllmEngineOptions = {
  client: JsonHttpClient;
  /** The client of the control routes (pause, weights, resume); default `client`. */
  controlClient?: JsonHttpClient;
  /** The served model name (`model` in the request); vLLM uses its only model when omitted. */
  model?: string;
  /** Keep a matched stop string at the end of `text`; default true. */
  includeStopInOutput?: boolean;
  name?: string;
};

const vllmChoiceSchema = z.object({
  text: z.string(),
  token_ids: z.array(z.number().int()).nullish(),
  logprobs: z
    .object({
      tokens: z.array(z.string()),
      token_logprobs: z.array(z.number().nullable()),
    })
    .nullish(),
  finish_reason: z.enum(['stop', 'length', 'abort']),
  stop_reason: z.union([z.string(), z.number()]).nullish(),
  weight_versions: z.array(z.object({ version: z.unknown() }).passthrough()).nullish(),
});

/** SGLang's pause modes as vLLM names them (`retract` has no vLLM counterpart). */
const VLLM_PAUSE_MODES: Record<PauseMode, string | null> = {
  abort: 'abort',
  in_place: 'keep',
  retract: null,
};

const vllmResponseSchema = z.object({ choices: z.array(vllmChoiceSchema).min(1) });

/** An Engine speaking vLLM's `/v1/completions` with token-id prompts. */
export class VllmEngine implements WeightUpdatableEngine {
  readonly name: string;
  readonly #client: JsonHttpClient;
  readonly #control: JsonHttpClient;
  readonly #model: string | undefined;
  readonly #includeStop: boolean;
  /** Settles when this client resumes the server it paused; null while not paused by it. */
  #resumed: { promise: Promise<void>; release: () => void } | null = null;

  constructor({ client, controlClient, model, includeStopInOutput = true, name }: VllmEngineOptions) {
    this.#client = client;
    this.#control = controlClient ?? client;
    this.#model = model;
    this.#includeStop = includeStopInOutput;
    this.name = name ?? `vllm@${client.baseUrl}`;
  }

  /** `POST /pause?mode=…` (abort, or keep for `in_place`); this client's new requests wait for `continueGeneration`. */
  async pauseGeneration(mode: PauseMode): Promise<void> {
    const vllmMode = VLLM_PAUSE_MODES[mode];
    if (vllmMode === null) throw new EngineBadRequestError(`vLLM has no pause mode like SGLang's ${mode}`);
    if (this.#resumed === null) {
      let release = () => {};
      const promise = new Promise<void>((resolve) => {
        release = resolve;
      });
      this.#resumed = { promise, release };
    }
    await this.#control.postJson(`/pause?mode=${vllmMode}`, {});
  }

  /** `POST /resume`; releases the requests held by this client. */
  async continueGeneration(): Promise<void> {
    try {
      await this.#control.postJson('/resume', {});
    } finally {
      this.#resumed?.release();
      this.#resumed = null;
    }
  }

  /** `POST /reset_prefix_cache`: `{success: false}` while requests hold cache blocks. */
  async flushCache(): Promise<WeightUpdateResult> {
    const answer = await this.#control.request('POST', '/reset_prefix_cache', {});
    const parsed = z.object({ success: z.boolean() }).safeParse(safeJson(answer.text));
    if (answer.statusCode === 200 && parsed.success) {
      return { success: parsed.data.success, message: parsed.data.success ? 'reset' : 'blocks still held' };
    }
    return { success: false, message: `HTTP ${answer.statusCode}: ${answer.text.slice(0, 500)}` };
  }

  /**
   * Reloads every worker's weights from `modelPath` (`/collective_rpc reload_weights`), then sets
   * the weight version (`/update_weight_version`). Any HTTP error is a refusal, returned as a value.
   */
  async updateWeightsFromDisk(
    modelPath: string,
    options: { signal?: AbortSignal; weightVersion?: number; timeoutMs?: number } = {},
  ): Promise<WeightUpdateResult> {
    try {
      await this.#control.postJson(
        '/collective_rpc',
        { method: 'reload_weights', kwargs: { weights_path: modelPath } },
        options.signal,
        options.timeoutMs,
      );
      if (options.weightVersion !== undefined) {
        await this.#control.postJson(
          '/update_weight_version',
          { new_version: String(options.weightVersion) },
          options.signal,
        );
      }
    } catch (error) {
      if (error instanceof EngineHttpError) return { success: false, message: error.message };
      throw error;
    }
    return { success: true, message: `reloaded weights from ${modelPath}` };
  }

  /** The weight version vLLM reports (`GET /weight_info`). */
  async weightVersion(): Promise<string | null> {
    const where = `${this.#control.baseUrl}/weight_info`;
    const answer = await this.#control.request('GET', '/weight_info');
    if (answer.statusCode !== 200) throw new EngineHttpError(where, answer.statusCode, answer.text);
    const parsed = z
      .object({ weight_version: z.union([z.string(), z.number()]).nullable() })
      .safeParse(safeJson(answer.text));
    if (!parsed.success)
      throw new EngineBadResponseError(where, 'expected { weight_version: string | null }');
    return parsed.data.weight_version === null ? null : String(parsed.data.weight_version);
  }

  async generate(request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
    // vLLM answers 503 while paused: wait for this client's own resume instead.
    const held = this.#resumed;
    if (held !== null && !(await settlesBeforeAbort(held.promise, signal))) return abortedResult(true);
    const body: Record<string, unknown> = {
      prompt: request.promptTokenIds,
      max_tokens: request.maxNewTokens,
      temperature: request.temperature,
      top_p: request.topP,
      stop: request.stop,
      include_stop_str_in_output: this.#includeStop,
      skip_special_tokens: false,
      logprobs: 0,
      return_tokens_as_token_ids: true,
      return_token_ids: true,
      return_weight_versions: true,
      n: 1,
      stream: false,
    };
    if (this.#model !== undefined) body.model = this.#model;
    if (request.seed !== undefined) body.seed = request.seed;
    const answer = await this.#client.postJson('/v1/completions', body, signal);
    if (answer.status === 'aborted') return abortedResult(true);
    const where = `${this.#client.baseUrl}/v1/completions`;
    const choice = parseResponseBody(vllmResponseSchema, answer.body, where).choices[0]!;
    return toGenerateResult(choice, this.#includeStop, where);
  }

  /** Closes the connection pool. */
  close(): void {
    this.#client.close();
    if (this.#control !== this.#client) this.#control.close();
  }
}

/** True when `promise` settles; false when `signal` aborts first. */
function settlesBeforeAbort(promise: Promise<void>, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal === undefined) return promise.then(() => true);
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => resolve(false);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    });
  });
}

function toGenerateResult(
  choice: z.infer<typeof vllmChoiceSchema>,
  includeStop: boolean,
  where: string,
): GenerateResult {
  const tokenIds =
    choice.token_ids ?? choice.logprobs?.tokens.map((token) => idFromTokenString(token, where));
  if (!tokenIds) {
    throw new EngineBadResponseError(
      where,
      'choices.0 has neither token_ids nor logprobs.tokens (vLLM too old?)',
    );
  }
  const logprobs = choice.logprobs ? choice.logprobs.token_logprobs.map((value) => value ?? 0) : null;
  if (logprobs && logprobs.length !== tokenIds.length) {
    throw new EngineBadResponseError(
      where,
      `choices.0.logprobs.token_logprobs has ${logprobs.length} entries but token_ids has ${tokenIds.length}`,
    );
  }
  const matchedStop =
    choice.finish_reason === 'stop' && typeof choice.stop_reason === 'string' ? choice.stop_reason : null;
  return {
    tokenIds,
    text: choice.text,
    logprobs,
    finishReason: choice.finish_reason,
    matchedStop,
    stopIncluded: matchedStop !== null && includeStop && choice.text.endsWith(matchedStop),
    policyVersion: policyVersionFrom(choice.weight_versions?.[0]?.version),
  };
}

function idFromTokenString(token: string, where: string): number {
  const match = /^token_id:(\d+)$/.exec(token);
  if (!match)
    throw new EngineBadResponseError(where, `logprobs token ${JSON.stringify(token)} is not "token_id:N"`);
  return Number(match[1]);
}
