/**
 * Client for vLLM's OpenAI-compatible `POST /v1/completions` with the prompt given as token
 * ids. Asks for `return_token_ids` (choices[].token_ids) and `logprobs: 0` with
 * `return_tokens_as_token_ids` (logprobs.tokens as "token_id:N", the fallback for ids on
 * servers without return_token_ids), and `include_stop_str_in_output`. The matched stop comes
 * from choices[0].stop_reason (a string, a token id, or null for EOS); finish_reason is
 * 'stop' | 'length' | 'abort'.
 */
import { z } from 'zod';
import { EngineBadResponseError } from './engine-errors.ts';
import type { JsonHttpClient } from './json-http-client.ts';
import { abortedResult, parseResponseBody } from './response-parsing.ts';
import type { Engine, GenerateRequest, GenerateResult } from './types.ts';

export type VllmEngineOptions = {
  client: JsonHttpClient;
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
});

const vllmResponseSchema = z.object({ choices: z.array(vllmChoiceSchema).min(1) });

/** An Engine speaking vLLM's `/v1/completions` with token-id prompts. */
export class VllmEngine implements Engine {
  readonly name: string;
  readonly #client: JsonHttpClient;
  readonly #model: string | undefined;
  readonly #includeStop: boolean;

  constructor({ client, model, includeStopInOutput = true, name }: VllmEngineOptions) {
    this.#client = client;
    this.#model = model;
    this.#includeStop = includeStopInOutput;
    this.name = name ?? `vllm@${client.baseUrl}`;
  }

  async generate(request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
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
  }
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
    policyVersion: null,
  };
}

function idFromTokenString(token: string, where: string): number {
  const match = /^token_id:(\d+)$/.exec(token);
  if (!match)
    throw new EngineBadResponseError(where, `logprobs token ${JSON.stringify(token)} is not "token_id:N"`);
  return Number(match[1]);
}
