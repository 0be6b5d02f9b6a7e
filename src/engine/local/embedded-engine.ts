/**
 * The embedded model as an engine: starts the PyTorch worker on a model folder and speaks
 * SGLang's `/generate` to it through the same client that talks to a real SGLang server, with
 * the folder's own tokenizer. Used by `solve`, `eval` and `quickstart` when no `--engine` is
 * given.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEngine, type HttpEngine } from '../create-engine.ts';
import { loadTokenizer } from '../load-tokenizer.ts';
import type { Tokenizer } from '../tokenizer.ts';
import { type EmbeddedWorker, startEmbeddedWorker } from './worker-supervisor.ts';

export type EmbeddedEngine = {
  engine: HttpEngine;
  tokenizer: Tokenizer;
  /** The model's context length (prompt + response tokens), or null when its config has none. */
  contextTokens: number | null;
  worker: EmbeddedWorker;
  close(): Promise<void>;
};

export type EmbeddedEngineOptions = {
  /** The model folder (config.json, weights, tokenizer files). */
  model: string;
  /** Requests in flight at once from this process. */
  maxConcurrency?: number;
  /** One request longer than this fails with ENGINE_TIMEOUT (default: the engine client's). */
  timeoutMs?: number;
  /** Receives the worker's log lines. */
  onLog?: (line: string, stream: 'stdout' | 'stderr') => void;
};

/** `max_position_embeddings` from a model folder's config.json, or null. */
export function modelContextLength(folder: string): number | null {
  try {
    const config = JSON.parse(readFileSync(join(folder, 'config.json'), 'utf8')) as {
      max_position_embeddings?: unknown;
    };
    const value = config.max_position_embeddings;
    return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : null;
  } catch {
    return null;
  }
}

/** Starts the worker on `model` and returns an engine for it; `close` stops both. */
export async function startEmbeddedEngine(options: EmbeddedEngineOptions): Promise<EmbeddedEngine> {
  const worker = await startEmbeddedWorker({
    model: options.model,
    port: 0,
    restart: false,
    ...(options.onLog ? { onLog: options.onLog } : {}),
  });
  try {
    const engine = createEngine({
      api: 'sglang',
      url: worker.url,
      name: `embedded:${options.model}`,
      ...(options.maxConcurrency === undefined ? {} : { maxConcurrency: options.maxConcurrency }),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    });
    const tokenizer = await loadTokenizer(options.model);
    return {
      engine,
      tokenizer,
      contextTokens: modelContextLength(options.model),
      worker,
      close: async () => {
        engine.close();
        await worker.stop();
      },
    };
  } catch (error) {
    await worker.stop();
    throw error;
  }
}
