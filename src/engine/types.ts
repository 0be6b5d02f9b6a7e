/**
 * The engine contract: token-level generation. Every engine (SGLang, vLLM, the embedded
 * PyTorch worker, OpenAI-compatible text APIs, the simulator) implements `Engine`.
 * Text-only APIs return `tokenIds: null` and `logprobs: null`.
 */

import type { ChatMessage } from './tokenizer.ts';

/** One generation request. `sessionId` lets a router keep a trajectory on one replica. */
export type GenerateRequest = {
  promptTokenIds: number[];
  /** The prompt as text, for engines that take text (OpenAI-compatible); token engines ignore it. */
  promptText?: string;
  /** The conversation, for chat APIs; when absent they send `promptText` as one user message. */
  messages?: readonly ChatMessage[];
  maxNewTokens: number;
  temperature: number;
  topP: number;
  stop: string[];
  seed?: number;
  sessionId?: string;
};

export type FinishReason = 'stop' | 'length' | 'abort';

export type GenerateResult = {
  tokenIds: number[] | null;
  text: string;
  logprobs: number[] | null;
  finishReason: FinishReason;
  /** The stop string that ended generation, or null (EOS, length, abort). */
  matchedStop: string | null;
  /** Whether `text` ends with `matchedStop` (false when the engine trimmed it). */
  stopIncluded?: boolean;
  /**
   * True when generation ended by a stop string or by EOS and the server did not say which
   * (the official OpenAI API trims the stop string and reports `"stop"` for both); `matchedStop`
   * is then null, and the caller decides from the text (see `src/agent/unreported-stop.ts`).
   */
  stopUnreported?: boolean;
  policyVersion: number | null;
  /** The replica that served the request (a router sets it: URL or name); absent when unknown. */
  replica?: string | null;
  /** Prompt tokens served from the engine's prefix cache (SGLang `meta_info.cached_tokens`); absent when unknown. */
  cachedTokens?: number;
};

export interface Engine {
  readonly name: string;
  generate(request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult>;
}
