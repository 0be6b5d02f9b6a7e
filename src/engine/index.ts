/**
 * The engine module: the Engine and Tokenizer contracts, HTTP clients for SGLang, vLLM and
 * OpenAI-compatible APIs, and Hugging Face byte-level BPE tokenizers (the embedded model's
 * byte-level tokenizer included).
 */
export {
  BYTE_LEVEL_CHAT_TEMPLATE,
  BYTE_LEVEL_EOS_ID,
  BYTE_LEVEL_EOS_TOKEN,
  BYTE_LEVEL_PAD_ID,
  BYTE_LEVEL_PAD_TOKEN,
  BYTE_LEVEL_VOCAB_SIZE,
  byteLevelTokenizerFiles,
  createByteLevelTokenizer,
  writeByteLevelTokenizerFiles,
} from './byte-level-tokenizer.ts';
export { ChatTemplate } from './chat-template.ts';
export { ConcurrencyLimiter } from './concurrency-limiter.ts';
export { createEngine, type EngineOptions, engineOptionsSchema, type HttpEngine } from './create-engine.ts';
export {
  EngineBadRequestError,
  EngineBadResponseError,
  EngineConfigError,
  EngineHttpError,
  EngineTimeoutError,
  EngineUnavailableError,
  retryAdvice,
} from './engine-errors.ts';
export { HfTokenizer, type HfTokenizerSource } from './hf-tokenizer.ts';
export { JsonHttpClient, type JsonHttpClientOptions, type PostResult } from './json-http-client.ts';
export { loadTokenizer, readTokenizerFile } from './load-tokenizer.ts';
export { OpenAiChatEngine, type OpenAiChatEngineOptions } from './openai-chat-engine.ts';
export { OpenAiCompletionsEngine, type OpenAiCompletionsEngineOptions } from './openai-completions-engine.ts';
export {
  createRouterPolicy,
  ROUTER_POLICY_NAMES,
  Router,
  type RouterOptions,
  type RouterPolicy,
  type RouterPolicyName,
  type RouterReplica,
} from './router/index.ts';
export { type ServedContextLengthOptions, servedContextLength } from './served-context-length.ts';
export { type PauseMode, SglangEngine, type SglangEngineOptions } from './sglang-engine.ts';
export { resolveTextStop, type TextStop, type TextStopInput } from './text-stop-resolution.ts';
export type { ChatMessage, EncodeOptions, Tokenizer } from './tokenizer.ts';
export { TokenizerError, type TokenizerErrorCode } from './tokenizer-errors.ts';
export type {
  Engine,
  FinishReason,
  GenerateRequest,
  GenerateResult,
  WeightUpdatableEngine,
  WeightUpdateResult,
} from './types.ts';
export { Utf8StreamDecoder } from './utf8-stream-decoder.ts';
export { VllmEngine, type VllmEngineOptions } from './vllm-engine.ts';
