/**
 * Client for SGLang's native `POST /generate`, token ids in and token ids out. Sends
 * `input_ids` and `sampling_params` (max_new_tokens, temperature, top_p, stop, no_stop_trim,
 * sampling_seed) with `return_logprob`; reads ids and logprobs from
 * `meta_info.output_token_logprobs` ([logprob, token_id, text|null] per token), `output_ids`
 * when present, and `meta_info.finish_reason` ({type:'stop', matched: str|int} |
 * {type:'length', length} | {type:'abort', message}). Token ids always include the tokens of
 * a matched stop string; `no_stop_trim` only decides whether `text` keeps it.
 *
 * Each request carries its own `rid`; when the caller's AbortSignal fires, the client drops the
 * connection and posts `/abort_request {rid}` so the server stops generating for nobody.
 * The policy version of a response is the first span of `meta_info.weight_versions` (SGLang
 * 0.5.23 labels each range of output tokens with the weights that sampled it) or else
 * `meta_info.weight_version`: the oldest weights that made any of its tokens.
 *
 * The control routes of a weight update (SGLang 0.5.23, docs/engines.md names the lines):
 * `pauseGeneration(mode)` (`/pause_generation {mode}`), `flushCache()` (`/flush_cache`: 200
 * when flushed, 400 with a text reason while requests run or wait), `updateWeightsFromDisk`
 * (`/update_weights_from_disk`; SGLang answers a failed load, or a load whose flush failed,
 * with HTTP 400 `{success: false, message}`, returned here as a value), `weightVersion()`
 * (`/model_info`, else `/get_model_info`), `continueGeneration()` (`/continue_generation`),
 * `abortAll()` (`/abort_request {abort_all: true}`). With mode `abort` the paused requests
 * answer their partial output with finish reason `abort`, which the agent loop resubmits as
 * `prompt + tokens so far` (new requests wait in SGLang until `continue`).
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { EngineBadResponseError, EngineHttpError } from './engine-errors.ts';
import type { JsonHttpClient } from './json-http-client.ts';
import { abortedResult, parseResponseBody, policyVersionFrom, safeJson } from './response-parsing.ts';
import type { GenerateRequest, GenerateResult, WeightUpdatableEngine, WeightUpdateResult } from './types.ts';

const weightUpdateSchema = z.object({ success: z.boolean(), message: z.string() });
const modelInfoSchema = z.object({ weight_version: z.union([z.string(), z.number()]).nullable() });

/** SGLang's `message` from a refused update's body, or the body itself. */
function refusalMessage(error: EngineHttpError): string {
  const parsed = weightUpdateSchema.safeParse(safeJson(error.body));
  return parsed.success ? parsed.data.message : `HTTP ${error.status}: ${error.body.slice(0, 500)}`;
}

/**
 * SGLang's pause modes: `abort` ends every request now with its partial output; `in_place`
 * keeps requests and their KV cache; `retract` keeps requests and recomputes their KV cache
 * at continue.
 */
export type PauseMode = 'abort' | 'in_place' | 'retract';

export type SglangEngineOptions = {
  client: JsonHttpClient;
  /**
   * The client of the control routes (pause, continue, weight update, abort); default `client`.
   * Give a separate one when generation can fill `client`'s slots: a pause queued behind the
   * requests it pauses waits for one of them to finish, and a weight update behind requests
   * held by the pause never runs.
   */
  controlClient?: JsonHttpClient;
  /** Keep a matched stop string at the end of `text` (`no_stop_trim`); default true. */
  includeStopInOutput?: boolean;
  name?: string;
};

const finishReasonSchema = z.union([
  z.object({
    type: z.literal('stop'),
    matched: z.union([z.string(), z.number(), z.array(z.number())]).nullish(),
  }),
  z.object({ type: z.literal('length'), length: z.number().optional() }),
  z.object({ type: z.literal('abort'), message: z.string().nullish() }),
]);

const sglangResponseSchema = z.object({
  text: z.string(),
  output_ids: z.array(z.number().int()).optional(),
  meta_info: z.object({
    finish_reason: finishReasonSchema,
    output_token_logprobs: z
      .array(z.tuple([z.number().nullable(), z.number().int()]).rest(z.unknown()))
      .optional(),
    weight_version: z.unknown().optional(),
    weight_versions: z.array(z.object({ version: z.unknown() }).passthrough()).optional(),
    cached_tokens: z.number().int().nonnegative().optional(),
  }),
});

/** An Engine speaking SGLang's `/generate` wire format. */
export class SglangEngine implements WeightUpdatableEngine {
  readonly name: string;
  readonly #client: JsonHttpClient;
  readonly #control: JsonHttpClient;
  readonly #includeStop: boolean;

  constructor({ client, controlClient, includeStopInOutput = true, name }: SglangEngineOptions) {
    this.#client = client;
    this.#control = controlClient ?? client;
    this.#includeStop = includeStopInOutput;
    this.name = name ?? `sglang@${client.baseUrl}`;
  }

  /** Loads new weights from a checkpoint folder the server can read (`/update_weights_from_disk`). */
  async updateWeightsFromDisk(
    modelPath: string,
    options: { signal?: AbortSignal; weightVersion?: number; timeoutMs?: number } = {},
  ): Promise<WeightUpdateResult> {
    let answer: Awaited<ReturnType<JsonHttpClient['postJson']>>;
    try {
      answer = await this.#control.postJson(
        '/update_weights_from_disk',
        {
          model_path: modelPath,
          // SGLang's default, said out loud: the scheduler flushes the cache the old weights made.
          flush_cache: true,
          ...(options.weightVersion === undefined ? {} : { weight_version: String(options.weightVersion) }),
        },
        options.signal,
        options.timeoutMs,
      );
    } catch (error) {
      // SGLang answers a refused update with 400 {success: false, message}: a value, not an outage.
      if (error instanceof EngineHttpError && error.status >= 400 && error.status < 500) {
        return { success: false, message: refusalMessage(error) };
      }
      throw error;
    }
    if (answer.status === 'aborted') return { success: false, message: 'aborted' };
    const parsed = weightUpdateSchema.safeParse(answer.body);
    if (!parsed.success) {
      throw new EngineBadResponseError(
        `${this.#client.baseUrl}/update_weights_from_disk`,
        'expected { success: boolean, message: string }',
      );
    }
    return parsed.data;
  }

  /** Stops generation (`/pause_generation {mode}`); resolves once the server has paused. */
  async pauseGeneration(mode: PauseMode): Promise<void> {
    await this.#control.postJson('/pause_generation', { mode });
  }

  /**
   * Flushes the server's KV/radix cache (`/flush_cache`). SGLang refuses (HTTP 400) while any
   * request runs, or waits when generation is not paused; the answer is text, not JSON.
   */
  async flushCache(): Promise<WeightUpdateResult> {
    const answer = await this.#control.request('POST', '/flush_cache', {});
    return { success: answer.statusCode === 200, message: answer.text.trim() };
  }

  /** The weight version the server reports (`/model_info`, or `/get_model_info` before 0.5.23). */
  async weightVersion(): Promise<string | null> {
    let answer = await this.#control.request('GET', '/model_info');
    if (answer.statusCode === 404) answer = await this.#control.request('GET', '/get_model_info');
    const where = `${this.#client.baseUrl}/model_info`;
    if (answer.statusCode !== 200) {
      throw new EngineHttpError(where, answer.statusCode, answer.text);
    }
    const parsed = modelInfoSchema.safeParse(safeJson(answer.text));
    if (!parsed.success)
      throw new EngineBadResponseError(where, 'expected { weight_version: string | null }');
    return parsed.data.weight_version === null ? null : String(parsed.data.weight_version);
  }

  /** Resumes paused generation (`/continue_generation`). */
  async continueGeneration(): Promise<void> {
    await this.#control.postJson('/continue_generation', {});
  }

  /** Aborts one request by its `rid` (`/abort_request`); it answers its partial output. */
  async abortRequest(rid: string): Promise<void> {
    await this.#control.postJson('/abort_request', { rid });
  }

  /** Aborts every request in flight or waiting (`/abort_request {abort_all: true}`). */
  async abortAll(): Promise<void> {
    await this.#control.postJson('/abort_request', { abort_all: true });
  }

  async generate(request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
    const samplingParams: Record<string, unknown> = {
      max_new_tokens: request.maxNewTokens,
      temperature: request.temperature,
      top_p: request.topP,
      stop: request.stop,
      no_stop_trim: this.#includeStop,
      skip_special_tokens: false,
    };
    if (request.seed !== undefined) samplingParams.sampling_seed = request.seed;
    const rid = randomUUID();
    const answer = await this.#client.postJson(
      '/generate',
      {
        input_ids: request.promptTokenIds,
        sampling_params: samplingParams,
        return_logprob: true,
        stream: false,
        rid,
      },
      signal,
    );
    if (answer.status === 'aborted') {
      // The server does not notice a dropped connection; tell it. Best effort: an abort that
      // fails (the server is gone) changes nothing for the caller.
      this.abortRequest(rid).catch(() => {});
      return abortedResult(true);
    }
    const where = `${this.#client.baseUrl}/generate`;
    const body = parseResponseBody(sglangResponseSchema, answer.body, where);
    return toGenerateResult(body, this.#includeStop, where);
  }

  /** Closes the connection pool. */
  close(): void {
    this.#client.close();
    if (this.#control !== this.#client) this.#control.close();
  }
}

function toGenerateResult(
  body: z.infer<typeof sglangResponseSchema>,
  includeStop: boolean,
  where: string,
): GenerateResult {
  const entries = body.meta_info.output_token_logprobs;
  const tokenIds = body.output_ids ?? entries?.map((entry) => entry[1]) ?? [];
  // A null logprob (the first token of some speculative paths) is recorded as 0.
  const logprobs = entries ? entries.map((entry) => entry[0] ?? 0) : null;
  if (logprobs && logprobs.length !== tokenIds.length) {
    throw new EngineBadResponseError(
      where,
      `meta_info.output_token_logprobs has ${logprobs.length} entries but output_ids has ${tokenIds.length}`,
    );
  }
  const finish = body.meta_info.finish_reason;
  const matchedStop = finish.type === 'stop' && typeof finish.matched === 'string' ? finish.matched : null;
  return {
    tokenIds,
    text: body.text,
    logprobs,
    finishReason: finish.type,
    matchedStop,
    stopIncluded: matchedStop !== null && includeStop && body.text.endsWith(matchedStop),
    policyVersion: policyVersionFrom(
      body.meta_info.weight_versions?.[0]?.version ?? body.meta_info.weight_version,
    ),
    ...(body.meta_info.cached_tokens === undefined ? {} : { cachedTokens: body.meta_info.cached_tokens }),
  };
}
