/**
 * Client for SGLang's native `POST /generate`, token ids in and token ids out. Sends
 * `input_ids` and `sampling_params` (max_new_tokens, temperature, top_p, stop, no_stop_trim,
 * sampling_seed) with `return_logprob`; reads ids and logprobs from
 * `meta_info.output_token_logprobs` ([logprob, token_id, text|null] per token), `output_ids`
 * when present, and `meta_info.finish_reason` ({type:'stop', matched: str|int} |
 * {type:'length', length} | {type:'abort', message}). Token ids always include the tokens of
 * a matched stop string; `no_stop_trim` only decides whether `text` keeps it.
 */
import { z } from 'zod';
import { EngineBadResponseError } from './engine-errors.ts';
import type { JsonHttpClient } from './json-http-client.ts';
import { abortedResult, parseResponseBody, policyVersionFrom } from './response-parsing.ts';
import type { Engine, GenerateRequest, GenerateResult } from './types.ts';

export type SglangEngineOptions = {
  client: JsonHttpClient;
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
    cached_tokens: z.number().int().nonnegative().optional(),
  }),
});

/** An Engine speaking SGLang's `/generate` wire format. */
export class SglangEngine implements Engine {
  readonly name: string;
  readonly #client: JsonHttpClient;
  readonly #includeStop: boolean;

  constructor({ client, includeStopInOutput = true, name }: SglangEngineOptions) {
    this.#client = client;
    this.#includeStop = includeStopInOutput;
    this.name = name ?? `sglang@${client.baseUrl}`;
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
    const answer = await this.#client.postJson(
      '/generate',
      {
        input_ids: request.promptTokenIds,
        sampling_params: samplingParams,
        return_logprob: true,
        stream: false,
      },
      signal,
    );
    if (answer.status === 'aborted') return abortedResult(true);
    const where = `${this.#client.baseUrl}/generate`;
    const body = parseResponseBody(sglangResponseSchema, answer.body, where);
    return toGenerateResult(body, this.#includeStop, where);
  }

  /** Closes the connection pool. */
  close(): void {
    this.#client.close();
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
    policyVersion: policyVersionFrom(body.meta_info.weight_version),
    ...(body.meta_info.cached_tokens === undefined ? {} : { cachedTokens: body.meta_info.cached_tokens }),
  };
}
