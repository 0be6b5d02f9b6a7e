/**
 * The engine a command talks to: `--engine URL` with `--api`, or, when no URL is given, the
 * embedded model under `.agentmath/models/` of the working directory or, failing that, of the
 * project folder this command is installed in (its worker started here and stopped by `close`,
 * or by the process lifecycle on a signal or a closed stdout). Shared by `solve` and `eval`;
 * `engineOptions` adds the flags every engine-calling command takes.
 */
import { fileURLToPath } from 'node:url';
import { type Command, Option } from 'commander';
import {
  createEngine,
  createRouterPolicy,
  type Engine,
  type EngineOptions,
  engineOptionsSchema,
  loadTokenizer,
  Router,
  servedContextLength,
} from '../../engine/index.ts';
import { startEmbeddedEngine } from '../../engine/local/index.ts';
import type { Tokenizer } from '../../engine/tokenizer.ts';
import { findEmbeddedModel } from '../../model/index.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { systemClock } from '../../shared/clock.ts';
import { defaultOf, integerOption } from '../cli-options.ts';
import { onShutdown } from '../process-lifecycle.ts';
import { resolveApiKey } from './api-key.ts';

/**
 * Where the embedded model is looked for after the working directory: `AGENTMATH_HOME`, else
 * the project folder this command is installed in (the one holding `bin/agentmath.js`).
 */
function projectHome(): string {
  return process.env.AGENTMATH_HOME || fileURLToPath(new URL('../../../', import.meta.url));
}

/** `--engine-timeout-ms`: the default is the engine client's own. */
export function addEngineTimeoutOption(command: Command): Command {
  return command.addOption(
    new Option('--engine-timeout-ms <ms>', 'one engine request longer than this fails (then is retried)')
      .argParser(integerOption({ min: 1 }))
      .default(defaultOf(engineOptionsSchema, 'timeoutMs')),
  );
}

export type EngineFlags = {
  /** One server, or several (`eval --engine URL URL`): then a prefix-aware router spreads the requests. */
  engine?: string | readonly string[];
  api: EngineOptions['api'];
  model?: string;
  /** `--api-key`; when absent the API's environment variable is read (see api-key.ts). */
  apiKey?: string;
  tokenizer?: string;
  /** Requests in flight at once. */
  concurrency?: number;
  /** One request's time limit. */
  engineTimeoutMs?: number;
};

export type EngineTarget = {
  /** A server's client, or a router over several. */
  engine: Engine;
  tokenizer: Tokenizer | null;
  /** The embedded model's folder, or null for an engine given by URL. */
  embeddedModel: string | null;
  /** The model's context length when known (the embedded model's config, or what the served model's /v1/models says), else null. */
  contextTokens: number | null;
  close: () => Promise<void>;
};

/** The embedded model a command without --engine would serve, or null (nothing is started). */
export function locateEmbeddedModel(): string | null {
  return findEmbeddedModel() ?? findEmbeddedModel(projectHome());
}

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
    const urls = typeof flags.engine === 'string' ? [flags.engine] : [...flags.engine];
    const engines = urls.map((url) =>
      createEngine({
        api: flags.api,
        url,
        ...(flags.model === undefined ? {} : { model: flags.model }),
        ...(apiKey === undefined ? {} : { apiKey }),
        ...(flags.concurrency === undefined ? {} : { maxConcurrency: flags.concurrency }),
        ...(flags.engineTimeoutMs === undefined ? {} : { timeoutMs: flags.engineTimeoutMs }),
      }),
    );
    const closeAll = async () => {
      for (const engine of engines) engine.close();
    };
    // A token API's server says its context (SGLang, vLLM, our engine: /v1/models); requests are
    // kept within the smallest, since each refuses one past its own.
    const contexts = textApi
      ? []
      : await Promise.all(
          urls.map((url) => servedContextLength({ url, ...(apiKey === undefined ? {} : { apiKey }) })),
        );
    const known = contexts.filter((tokens): tokens is number => tokens !== null);
    const contextTokens = known.length === 0 ? null : Math.min(...known);
    const [single] = engines;
    if (engines.length === 1 && single !== undefined)
      return { engine: single, tokenizer, embeddedModel: null, contextTokens, close: closeAll };
    // Several servers: a trajectory stays on the replica that holds its prefix (as train rl routes).
    const router = new Router({
      replicas: engines.map((engine, index) => ({ name: urls[index] as string, engine })),
      policy: createRouterPolicy('prefix-aware'),
      clock: systemClock,
    });
    return { engine: router, tokenizer, embeddedModel: null, contextTokens, close: closeAll };
  }
  const model = locateEmbeddedModel();
  if (model === null) {
    throw new AgentMathError(
      'NO_ENGINE',
      'no engine: pass --engine URL with --api sglang|vllm|openai|openai-chat (for example a running SGLang ' +
        'server: --engine http://127.0.0.1:30000 --api sglang --tokenizer MODEL_DIR), or train the embedded ' +
        `model first (\`agentmath quickstart\` or \`agentmath train sft --task arith\`) so that .agentmath/models/ holds one (looked in ${process.cwd()} and ${projectHome()}, which AGENTMATH_HOME sets)`,
    );
  }
  process.stderr.write(`starting the embedded model ${model} …\n`);
  const embedded = await startEmbeddedEngine({
    model,
    ...(flags.concurrency === undefined ? {} : { maxConcurrency: flags.concurrency }),
    ...(flags.engineTimeoutMs === undefined ? {} : { timeoutMs: flags.engineTimeoutMs }),
    onLog: (line, stream) => {
      if (stream === 'stderr' && /error|traceback/i.test(line)) process.stderr.write(`worker: ${line}\n`);
    },
  });
  // Stopped on a signal or a closed stdout too, so the PyTorch worker never outlives the command.
  const unregister = onShutdown(embedded.close);
  return {
    engine: embedded.engine,
    tokenizer: embedded.tokenizer,
    embeddedModel: model,
    contextTokens: embedded.contextTokens,
    close: async () => {
      unregister();
      await embedded.close();
    },
  };
}
