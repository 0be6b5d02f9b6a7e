/**
 * `createEngine`: one validated options object (zod, strict) → an engine client for SGLang,
 * vLLM, or an OpenAI-compatible API (text or chat), with its own keep-alive connection pool.
 */
import { z } from 'zod';
import { EngineConfigError } from './engine-errors.ts';
import { JsonHttpClient } from './json-http-client.ts';
import { OpenAiChatEngine } from './openai-chat-engine.ts';
import { OpenAiCompletionsEngine } from './openai-completions-engine.ts';
import { SglangEngine } from './sglang-engine.ts';
import type { Engine } from './types.ts';
import { VllmEngine } from './vllm-engine.ts';

export const engineOptionsSchema = z
  .object({
    api: z.enum(['sglang', 'vllm', 'openai', 'openai-chat']),
    url: z.url({ protocol: /^https?$/ }),
    /** Served model name; required for the OpenAI-compatible APIs. */
    model: z.string().min(1).optional(),
    /** Sent as `Authorization: Bearer <apiKey>`. */
    apiKey: z.string().min(1).optional(),
    name: z.string().min(1).optional(),
    timeoutMs: z.number().int().positive().default(600_000),
    maxConcurrency: z.number().int().positive().default(64),
    /** Token engines: keep a matched stop string at the end of `text`. */
    includeStopInOutput: z.boolean().default(true),
    /** openai-chat: continue a trailing assistant message (vLLM's continue_final_message). */
    continueFinalMessage: z.boolean().default(false),
  })
  .strict()
  .refine((options) => options.api === 'sglang' || options.api === 'vllm' || options.model !== undefined, {
    message: 'model is required for the openai and openai-chat APIs',
    path: ['model'],
  });

export type EngineOptions = z.input<typeof engineOptionsSchema>;

/** An engine client that owns a connection pool; `close()` releases it. */
export type HttpEngine = Engine & { close(): void };

/** Builds an engine client from validated options; throws ENGINE_CONFIG_INVALID naming the bad field. */
export function createEngine(options: EngineOptions): HttpEngine {
  const parsed = engineOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const detail = parsed.error.issues
      .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(options)'}: ${issue.message}`)
      .join('; ');
    throw new EngineConfigError(`engine options: ${detail}`, { cause: parsed.error });
  }
  const config = parsed.data;
  const headers: Record<string, string> = {};
  if (config.apiKey !== undefined) headers.authorization = `Bearer ${config.apiKey}`;
  const client = new JsonHttpClient({
    baseUrl: config.url,
    timeoutMs: config.timeoutMs,
    maxConcurrency: config.maxConcurrency,
    headers,
  });
  const name = config.name !== undefined ? { name: config.name } : {};
  switch (config.api) {
    case 'sglang':
      return new SglangEngine({
        client,
        // Pause, continue, weight update and abort go on their own connections: on the generation
        // client they would queue behind the requests they are meant to pause.
        controlClient: new JsonHttpClient({
          baseUrl: config.url,
          timeoutMs: config.timeoutMs,
          maxConcurrency: 4,
          headers,
        }),
        includeStopInOutput: config.includeStopInOutput,
        ...name,
      });
    case 'vllm':
      return new VllmEngine({
        client,
        controlClient: new JsonHttpClient({
          baseUrl: config.url,
          timeoutMs: config.timeoutMs,
          maxConcurrency: 4,
          headers,
        }),
        includeStopInOutput: config.includeStopInOutput,
        ...(config.model !== undefined ? { model: config.model } : {}),
        ...name,
      });
    case 'openai':
      return new OpenAiCompletionsEngine({ client, model: config.model!, ...name });
    case 'openai-chat':
      return new OpenAiChatEngine({
        client,
        model: config.model!,
        continueFinalMessage: config.continueFinalMessage,
        ...name,
      });
  }
}
