/**
 * Client for OpenAI-compatible chat completions (`POST /v1/chat/completions`), for API models
 * without token access: results carry `tokenIds: null` and `logprobs: null`. Sends
 * `request.messages`, or `promptText` as one user message. With `continueFinalMessage`, a
 * conversation ending in an assistant message is continued in place (vLLM's
 * `continue_final_message` + `add_generation_prompt: false`), which is how a reply resumes
 * after a tool result. The matched stop is read or inferred as for text completions.
 */
import { z } from 'zod';
import { EngineBadRequestError } from './engine-errors.ts';
import type { JsonHttpClient } from './json-http-client.ts';
import { openAiFinishReasonSchema, reportedStopSchema } from './openai-completions-engine.ts';
import { abortedResult, parseResponseBody } from './response-parsing.ts';
import { resolveTextStop } from './text-stop-resolution.ts';
import type { ChatMessage } from './tokenizer.ts';
import type { Engine, GenerateRequest, GenerateResult } from './types.ts';

export type OpenAiChatEngineOptions = {
  client: JsonHttpClient;
  model: string;
  /** Continue a trailing assistant message instead of starting a new one (vLLM extension). */
  continueFinalMessage?: boolean;
  name?: string;
};

const chatChoiceSchema = z.object({
  message: z.object({ content: z.string().nullable() }),
  finish_reason: openAiFinishReasonSchema,
  stop_reason: reportedStopSchema,
  matched_stop: reportedStopSchema,
});

const chatResponseSchema = z.object({ choices: z.array(chatChoiceSchema).min(1) });

/** An Engine over an OpenAI-compatible chat completions API. */
export class OpenAiChatEngine implements Engine {
  readonly name: string;
  readonly #client: JsonHttpClient;
  readonly #model: string;
  readonly #continueFinalMessage: boolean;

  constructor({ client, model, continueFinalMessage = false, name }: OpenAiChatEngineOptions) {
    this.#client = client;
    this.#model = model;
    this.#continueFinalMessage = continueFinalMessage;
    this.name = name ?? `openai-chat:${model}@${client.baseUrl}`;
  }

  async generate(request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
    const messages: readonly ChatMessage[] | undefined =
      request.messages ??
      (request.promptText !== undefined ? [{ role: 'user', content: request.promptText }] : undefined);
    if (!messages || messages.length === 0) {
      throw new EngineBadRequestError(
        `${this.name}: chat completions need request.messages or request.promptText`,
      );
    }
    const body: Record<string, unknown> = {
      model: this.#model,
      messages,
      max_tokens: request.maxNewTokens,
      temperature: request.temperature,
      top_p: request.topP,
      n: 1,
      stream: false,
    };
    if (request.stop.length > 0) body.stop = request.stop;
    if (request.seed !== undefined) body.seed = request.seed;
    if (this.#continueFinalMessage && messages[messages.length - 1]?.role === 'assistant') {
      body.continue_final_message = true;
      body.add_generation_prompt = false;
    }
    const answer = await this.#client.postJson('/v1/chat/completions', body, signal);
    if (answer.status === 'aborted') return abortedResult(false);
    const where = `${this.#client.baseUrl}/v1/chat/completions`;
    const choice = parseResponseBody(chatResponseSchema, answer.body, where).choices[0]!;
    const text = choice.message.content ?? '';
    const stop = resolveTextStop({
      finishReason: choice.finish_reason,
      text,
      requestedStops: request.stop,
      reportedStop: choice.stop_reason !== undefined ? choice.stop_reason : choice.matched_stop,
    });
    return {
      tokenIds: null,
      text,
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
