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

/** What loading new weights from disk answered (SGLang's `/update_weights_from_disk`). */
export type WeightUpdateResult = { success: boolean; message: string };

/**
 * An engine whose served weights can be replaced by a checkpoint on disk, after a training
 * step (SGLang's `POST /update_weights_from_disk {model_path}`; the embedded worker serves the
 * same route). The policy version the engine reports changes with the weights.
 */
export interface WeightUpdatableEngine extends Engine {
  /**
   * Loads new weights from a model folder. `weightVersion` is SGLang's `weight_version`: the
   * version the engine reports in each response's `meta_info` from then on.
   */
  updateWeightsFromDisk(
    modelPath: string,
    /** `timeoutMs`: how long this load may take (a large model's takes longer than a request). */
    options?: { signal?: AbortSignal; weightVersion?: number; timeoutMs?: number },
  ): Promise<WeightUpdateResult>;
}
