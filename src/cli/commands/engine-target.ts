/**
 * The engine a command talks to: `--engine URL` with `--api`, or, when no URL is given, the
 * embedded model under `.agentmath/models/` (its worker started here and stopped by `close`).
 * Shared by `solve` and `eval`.
 */
import { findEmbeddedModel, startEmbeddedEngine } from '../../engine/embedded/index.ts';
import { createEngine, type HttpEngine, loadTokenizer } from '../../engine/index.ts';
import type { Tokenizer } from '../../engine/tokenizer.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { resolveApiKey } from './api-key.ts';

export type EngineFlags = {
  engine?: string;
  api: 'sglang' | 'vllm' | 'openai' | 'openai-chat';
  model?: string;
  /** `--api-key`; when absent the API's environment variable is read (see api-key.ts). */
  apiKey?: string;
  tokenizer?: string;
  /** Requests in flight at once. */
  concurrency?: number;
};

export type EngineTarget = {
  engine: HttpEngine;
  tokenizer: Tokenizer | null;
  /** The embedded model's folder, or null for an engine given by URL. */
  embeddedModel: string | null;
  /** The model's context length when known (the embedded model's config), else null. */
  contextTokens: number | null;
  close: () => Promise<void>;
};

export async function resolveEngineTarget(flags: EngineFlags): Promise<EngineTarget> {
  if (flags.engine !== undefined) {
    const textApi = flags.api === 'openai' || flags.api === 'openai-chat';
    if (flags.tokenizer === undefined && !textApi) {
      throw new AgentMathError(
        'CLI_BAD_OPTION',
        `--api ${flags.api} works on token ids: pass --tokenizer DIR (the model folder with tokenizer.json and tokenizer_config.json)`,
      );
    }
    const apiKey = resolveApiKey(flags.api, flags.apiKey);
    const tokenizer = flags.tokenizer === undefined ? null : await loadTokenizer(flags.tokenizer);
    const engine = createEngine({
      api: flags.api,
      url: flags.engine,
      ...(flags.model === undefined ? {} : { model: flags.model }),
      ...(apiKey === undefined ? {} : { apiKey }),
      ...(flags.concurrency === undefined ? {} : { maxConcurrency: flags.concurrency }),
    });
    return { engine, tokenizer, embeddedModel: null, contextTokens: null, close: async () => engine.close() };
  }
  const model = findEmbeddedModel();
  if (model === null) {
    throw new AgentMathError(
      'NO_ENGINE',
      'no engine: pass --engine URL with --api sglang|vllm|openai|openai-chat (for example a running SGLang ' +
        'server: --engine http://127.0.0.1:30000 --api sglang --tokenizer MODEL_DIR), or train the embedded ' +
        'model first (`agentmath quickstart` or `agentmath train sft --task arith`) so that .agentmath/models/ holds one',
    );
  }
  process.stderr.write(`starting the embedded model ${model} …\n`);
  const embedded = await startEmbeddedEngine({
    model,
    ...(flags.concurrency === undefined ? {} : { maxConcurrency: flags.concurrency }),
    onLog: (line, stream) => {
      if (stream === 'stderr' && /error|traceback/i.test(line)) process.stderr.write(`worker: ${line}\n`);
    },
  });
  return {
    engine: embedded.engine,
    tokenizer: embedded.tokenizer,
    embeddedModel: model,
    contextTokens: embedded.contextTokens,
    close: embedded.close,
  };
}
