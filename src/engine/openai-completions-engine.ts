/**
 * Client for OpenAI-compatible text completions (`POST /v1/completions` with a text prompt),
 * for API models without token access: results carry `tokenIds: null` and `logprobs: null`.
 * The matched stop is read from `stop_reason` (vLLM) or `matched_stop` (SGLang), else
 * inferred (see text-stop-resolution.ts).
 */
import { z } from 'zod';
import { EngineBadRequestError } from './engine-errors.ts';
import type { JsonHttpClient } from './json-http-client.ts';
import { abortedResult, parseResponseBody } from './response-parsing.ts';
import { resolveTextStop } from './text-stop-resolution.ts';
import type { Engine, FinishReason, GenerateRequest, GenerateResult } from './types.ts';

export type OpenAiCompletionsEngineOptions = {
  client: JsonHttpClient;
  model: string;
  name?: string;
};

/** OpenAI's finish reasons mapped onto ours; a content filter cut counts as an abort. */
export const openAiFinishReasonSchema = z
  .enum(['stop', 'length', 'content_filter', 'abort', 'tool_calls', 'function_call'])
  .transform(
    (reason): FinishReason => (reason === 'length' ? 'length' : reason === 'stop' ? 'stop' : 'abort'),
  );

/** `stop_reason` (vLLM) / `matched_stop` (SGLang): absent on the official API. */
export const reportedStopSchema = z.union([z.string(), z.number()]).nullable().optional();

const completionChoiceSchema = z.object({
  text: z.string(),
  finish_reason: openAiFinishReasonSchema,
  stop_reason: reportedStopSchema,
  matched_stop: reportedStopSchema,
});

const completionResponseSchema = z.object({ choices: z.array(completionChoiceSchema).min(1) });

/** An Engine over an OpenAI-compatible text completions API. */
export class OpenAiCompletionsEngine implements Engine {
  readonly name: string;
  readonly #client: JsonHttpClient;
  readonly #model: string;

  constructor({ client, model, name }: OpenAiCompletionsEngineOptions) {
    this.#client = client;
    this.#model = model;
    this.name = name ?? `openai:${model}@${client.baseUrl}`;
  }

  async generate(request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
    if (request.promptText === undefined) {
      throw new EngineBadRequestError(`${this.name}: text completions need request.promptText`);
    }
    const body: Record<string, unknown> = {
      model: this.#model,
      prompt: request.promptText,
      max_tokens: request.maxNewTokens,
      temperature: request.temperature,
      top_p: request.topP,
      n: 1,
      stream: false,
    };
    if (request.stop.length > 0) body.stop = request.stop;
    if (request.seed !== undefined) body.seed = request.seed;
    const answer = await this.#client.postJson('/v1/completions', body, signal);
    if (answer.status === 'aborted') return abortedResult(false);
    const where = `${this.#client.baseUrl}/v1/completions`;
    const choice = parseResponseBody(completionResponseSchema, answer.body, where).choices[0]!;
    const stop = resolveTextStop({
      finishReason: choice.finish_reason,
      text: choice.text,
      requestedStops: request.stop,
      reportedStop: choice.stop_reason !== undefined ? choice.stop_reason : choice.matched_stop,
    });
    return {
      tokenIds: null,
      text: choice.text,
      logprobs: null,
      finishReason: choice.finish_reason,
      ...stop,
      policyVersion: null,
    };
  }

  /** Closes the connection pool. */
  close(): void {
    this.#client.close();
  }
}
