import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { benchEngine } from '../../bench/engine-bench.ts';
import { renderEngineModelBench, runEngineModelBench } from '../../bench/engine-model-bench.ts';
import {
  type PrefixCacheWorkload,
  renderPrefixCacheBench,
  runPrefixCacheBench,
} from '../../bench/prefix-cache-bench.ts';
import { ENGINE_API_KEY_VARIABLE, startEmbeddedWorker, type WorkerEvent } from '../../engine/local/index.ts';
import { isHuggingFaceModelFolder, modelFolderIssue } from '../../model/index.ts';
import { countNoun } from '../../shared/count-noun.ts';
import {
  choiceOption,
  hostOption,
  integerOption,
  listOption,
  portOption,
  usageError,
} from '../cli-options.ts';
import { onShutdown } from '../process-lifecycle.ts';

type ServeOptions = {
  model: string;
  port: number;
  host: string;
  apiKey?: string;
  auth: boolean;
  maxRunningRequests?: number;
  decodeThreads?: number;
  decodeDtype?: string;
  decodeLinear?: string;
  prefixCacheMb?: number;
  seed?: number;
};

function describe(event: WorkerEvent): string {
  switch (event.type) {
    case 'worker-listening':
      return `worker pid ${event.pid} listening on port ${event.port}`;
    case 'worker-healthy':
      return `worker healthy at ${event.url}`;
    case 'worker-exit':
      return `worker exited (code ${event.code}, signal ${event.signal})${event.expected ? '' : ' unexpectedly'}`;
    case 'worker-restart':
      return `restarting the worker in ${event.delayMs} ms (attempt ${event.attempt})`;
    case 'worker-gave-up':
      return `the worker keeps crashing; gave up after ${event.restarts} restarts`;
  }
}

const threads = integerOption({ min: 0, max: 1024 });
const decodeDtypeOption = choiceOption(['auto', 'float32', 'bfloat16', 'int8']);
const decodeLinearOption = choiceOption(['packed', 'plain']);
const DECODE_LINEAR_HELP =
  "Hugging Face models on a CPU: generation's linear layers on weights packed once into oneDNN's layout (packed, default) or on plain weights (plain)";

const prefixCacheOption = integerOption({ min: 0, max: 1_048_576 });
const PREFIX_CACHE_HELP =
  "Hugging Face models: MiB of keys and values the engine keeps for prompts that begin like earlier ones (an agent's next turn, a shared system prompt, a GRPO group); 0: none (default 1024)";

/** The worker's arguments for the decode options given. */
function decodeArgs(options: {
  decodeDtype?: string | undefined;
  decodeLinear?: string | undefined;
  prefixCacheMb?: number | undefined;
}): string[] {
  return [
    ...(options.decodeDtype === undefined ? [] : ['--decode-dtype', options.decodeDtype]),
    ...(options.decodeLinear === undefined ? [] : ['--decode-linear', options.decodeLinear]),
    ...(options.prefixCacheMb === undefined ? [] : ['--prefix-cache-mb', String(options.prefixCacheMb)]),
  ];
}

/** The worker's own preset models (python/agentmath_engine/app.py `PRESETS`). */
const WORKER_PRESETS = ['tiny', 'test'];

/** Refuses (exit 2, before the worker starts) a `--model` that is neither a preset nor a model folder. */
function assertServableModel(model: string): void {
  if (WORKER_PRESETS.includes(model)) return;
  const issue = modelFolderIssue(resolve(model));
  if (issue !== null)
    throw usageError(`--model ${model}: ${issue}; give ${WORKER_PRESETS.join(', ')} or a model folder`);
}

/** `agentmath engine serve`: the embedded PyTorch worker behind SGLang's routes. */
export function registerEngine(program: Command): void {
  const engine = program.command('engine').description('the local PyTorch engine');
  engine
    .command('serve')
    .description(
      'start the local engine (SGLang routes: /generate, weight updates), restart it if it crashes',
    )
    .option('--model <name|path>', 'tiny, test, a saved model folder, or a Hugging Face folder', 'tiny')
    .option('--port <n>', 'port (0 picks a free one)', portOption, 30000)
    .option(
      '--host <host>',
      'address to bind (any but loopback needs --api-key or --no-auth)',
      hostOption,
      '127.0.0.1',
    )
    .option(
      '--api-key <key>',
      `require this bearer token on every route but /health (default: ${ENGINE_API_KEY_VARIABLE}); empty is refused`,
    )
    .option('--no-auth', 'serve a non-loopback --host without a key (printed as a warning)')
    .option(
      '--max-running-requests <n>',
      "sequences decoded together (default: the worker's)",
      integerOption({ min: 1, max: 4096 }),
    )
    .option('--decode-threads <n>', 'torch threads while generating (0 = all cores)', threads)
    .option(
      '--decode-dtype <dtype>',
      "Hugging Face models: the dtype generation reads the weights in: float32 (default: the master weights, logprobs equal to the trainer's), bfloat16, int8 (int8 weights, bf16 activations), or auto (bf16 where this CPU runs the model's layers faster in it, timed at start, else fp32)",
      decodeDtypeOption,
    )
    .option('--decode-linear <kind>', DECODE_LINEAR_HELP, decodeLinearOption)
    .option('--prefix-cache-mb <n>', PREFIX_CACHE_HELP, prefixCacheOption)
    .option('--seed <n>', 'initialisation seed of a preset model', integerOption())
    .action(async (options: ServeOptions) => {
      assertServableModel(options.model);
      const log = (line: string) => process.stderr.write(`${line}\n`);
      const { maxRunningRequests, decodeThreads, seed } = options;
      const apiKey = options.apiKey ?? process.env[ENGINE_API_KEY_VARIABLE];
      const worker = await startEmbeddedWorker({
        model: options.model,
        host: options.host,
        ...(apiKey === undefined ? {} : { apiKey }),
        noAuth: !options.auth,
        port: options.port,
        ...(maxRunningRequests === undefined ? {} : { maxRunningRequests }),
        ...(decodeThreads === undefined ? {} : { decodeThreads }),
        ...(seed === undefined ? {} : { seed }),
        extraArgs: decodeArgs(options),
        onLog: (line) => log(`[worker] ${line}`),
        onEvent: (event) => log(`[engine] ${describe(event)}`),
      });
      // Served until a signal: the lifecycle stops the worker, then the process exits by it.
      onShutdown(async () => {
        log('[engine] stopping');
        await worker.stop();
      });
      process.stdout.write(`${worker.url}\n`);
      await new Promise<never>(() => {});
    });
}

type EngineBenchOptions = {
  model: string;
  url?: string;
  batches?: number[];
  newTokens?: number;
  promptTokens?: number;
  rounds: number;
  decodeThreads?: number;
  decodeDtype?: string;
  decodeLinear?: string;
  profile?: boolean;
  json?: boolean;
};

/** `agentmath bench engine`: generation tokens/s at batch 1/16/64. */
export function registerEngineBench(bench: Command): void {
  bench
    .command('engine')
    .description(
      'local engine: generation tokens/s at batch 1, 16, 64 (baseline: batch 1); with a Hugging Face --model DIR: at 1, 8, 32 concurrent requests against transformers generate and a memory-bandwidth bound',
    )
    .option(
      '--model <name|path>',
      'model to serve (a Hugging Face folder: compared with transformers generate)',
      'tiny',
    )
    .option(
      '--url <url>',
      `measure a worker already running here instead (its key from ${ENGINE_API_KEY_VARIABLE})`,
    )
    .option(
      '--batches <list>',
      'batch sizes: concurrent requests (default 1,16,64; 1,8,32 with a Hugging Face --model)',
      listOption(integerOption({ min: 1, max: 4096 })),
    )
    .option(
      '--new-tokens <n>',
      'tokens generated per request (default 256; 64 with a Hugging Face --model)',
      integerOption({ min: 1 }),
    )
    .option(
      '--prompt-tokens <n>',
      'prompt length (default 100; 64 with a Hugging Face --model)',
      integerOption({ min: 1 }),
    )
    .option('--rounds <n>', 'repetitions per batch size', integerOption({ min: 1 }), 3)
    .option('--decode-threads <n>', 'torch threads while generating (0 = all cores)', threads)
    .option(
      '--decode-dtype <dtype>',
      'Hugging Face models: float32 (default: the master weights), bfloat16, int8 (int8 weights, bf16 activations), or auto (bf16 where this CPU runs the model faster in it, timed at start)',
      decodeDtypeOption,
    )
    .option('--decode-linear <kind>', DECODE_LINEAR_HELP, decodeLinearOption)
    .option(
      '--profile',
      "with a Hugging Face --model: also profile the engine's decode step at each concurrency (each op's share, the engine's phases)",
    )
    .option('--json', 'print the figures as JSON')
    .action(async (options: EngineBenchOptions) => {
      const { decodeThreads } = options;
      const apiKey = process.env[ENGINE_API_KEY_VARIABLE] || undefined;
      const huggingFace = options.url === undefined && isHuggingFaceModelFolder(options.model);
      const worker = options.url
        ? null
        : await startEmbeddedWorker({
            model: options.model,
            port: 0,
            restart: false,
            // A real model on a shared machine can take minutes to load.
            startupTimeoutMs: 600_000,
            ...(decodeThreads === undefined ? {} : { decodeThreads }),
            extraArgs: decodeArgs(options),
          });
      const unregister = onShutdown(async () => worker?.stop());
      try {
        const progress = options.json ? () => {} : (message: string) => process.stderr.write(`${message}\n`);
        if (huggingFace && worker !== null) {
          const modelReport = await runEngineModelBench({
            url: worker.url,
            headers: { 'Content-Type': 'application/json' },
            model: options.model,
            concurrency: options.batches ?? [1, 8, 32],
            newTokens: options.newTokens ?? 64,
            promptTokens: options.promptTokens ?? 64,
            rounds: options.rounds,
            profile: options.profile === true,
            onProgress: progress,
          });
          process.stdout.write(
            options.json ? `${JSON.stringify(modelReport, null, 2)}\n` : renderEngineModelBench(modelReport),
          );
          return;
        }
        const report = await benchEngine({
          url: worker?.url ?? options.url!,
          ...(worker === null && apiKey !== undefined ? { apiKey } : {}),
          batchSizes: options.batches ?? [1, 16, 64],
          newTokens: options.newTokens ?? 256,
          promptTokens: options.promptTokens ?? 100,
          rounds: options.rounds,
          onProgress: options.json ? () => {} : (message) => process.stderr.write(`${message}\n`),
        });
        if (options.json) {
          process.stdout.write(`${JSON.stringify({ model: options.model, ...report }, null, 2)}\n`);
          return;
        }
        const rows: [string, string][] = report.generation.map((figures) => [
          `generate · batch ${figures.batchSize}`,
          `${figures.tokensPerSecondP50.toFixed(0)} tok/s p50 (min ${figures.tokensPerSecondMin.toFixed(0)}), ` +
            `request p50 ${figures.requestSecondsP50.toFixed(2)} s / p99 ${figures.requestSecondsP99.toFixed(2)} s` +
            (figures.ratioToBatch1 === null ? '' : `, ×${figures.ratioToBatch1.toFixed(1)} vs batch 1`),
        ]);
        const width = Math.max(...rows.map((row) => row[0].length));
        for (const [name, value] of rows) process.stdout.write(`${name.padEnd(width)}  ${value}\n`);
        process.stdout.write(
          `(prompt ${report.promptTokens} tokens, ${report.newTokens} new tokens per request, ${countNoun(report.rounds, 'round')}; shared machines make these noisy)\n`,
        );
      } finally {
        unregister();
        await worker?.stop();
      }
    });
}

type PrefixCacheBenchFlags = PrefixCacheWorkload & {
  model: string;
  prefixCacheMb?: number;
  decodeThreads?: number;
  decodeDtype?: string;
  decodeLinear?: string;
  json?: boolean;
};

/** `agentmath bench prefix-cache --model DIR`: an agent's multi-turn traffic with and without the engine's prefix cache. */
export function registerPrefixCacheBench(bench: Command): void {
  const count = (max: number) => integerOption({ min: 1, max });
  bench
    .command('prefix-cache')
    .description(
      "local engine, Hugging Face --model: an agent's traffic (conversations of several turns, one system prompt) on the engine with its prefix cache and on the same engine without, alternating in one run: workload and request time p50/p99, cached share of prompt tokens, speedup",
    )
    .requiredOption('--model <dir>', 'a Hugging Face model folder')
    .option('--conversations <n>', 'conversations at once', count(1024), 16)
    .option('--turns <n>', 'turns per conversation', count(64), 3)
    .option('--system-tokens <n>', 'system prompt tokens, shared by every conversation', count(100_000), 160)
    .option('--problem-tokens <n>', "each conversation's own prompt tokens after it", count(100_000), 40)
    .option('--new-tokens <n>', 'tokens generated per turn (EOS ignored)', count(100_000), 32)
    .option('--tool-tokens <n>', 'interpreter output tokens between turns', count(100_000), 24)
    .option('--rounds <n>', 'repetitions of the workload on each engine', count(1000), 3)
    .option('--prefix-cache-mb <n>', `the cached engine's budget (${PREFIX_CACHE_HELP})`, prefixCacheOption)
    .option('--decode-threads <n>', 'torch threads while generating (0 = all cores)', threads)
    .option('--decode-dtype <dtype>', 'as for bench engine', decodeDtypeOption)
    .option('--decode-linear <kind>', DECODE_LINEAR_HELP, decodeLinearOption)
    .option('--json', 'print the figures as JSON')
    .action(async (flags: PrefixCacheBenchFlags) => {
      if (!isHuggingFaceModelFolder(flags.model)) {
        throw usageError(
          `--model ${flags.model}: not a Hugging Face model folder (config.json and tokenizer.json)`,
        );
      }
      const config = JSON.parse(readFileSync(join(flags.model, 'config.json'), 'utf8')) as {
        vocab_size?: unknown;
      };
      if (typeof config.vocab_size !== 'number' || config.vocab_size < 2) {
        throw usageError(`${join(flags.model, 'config.json')}: no vocab_size`);
      }
      const { decodeThreads } = flags;
      const start = (prefixCacheMb: number | undefined) =>
        startEmbeddedWorker({
          model: flags.model,
          port: 0,
          restart: false,
          startupTimeoutMs: 600_000,
          ...(decodeThreads === undefined ? {} : { decodeThreads }),
          extraArgs: decodeArgs({ ...flags, prefixCacheMb }),
        });
      const progress = flags.json ? () => {} : (message: string) => process.stderr.write(`${message}\n`);
      const workers: Awaited<ReturnType<typeof startEmbeddedWorker>>[] = [];
      const unregister = onShutdown(async () => {
        await Promise.all(workers.map((worker) => worker.stop()));
      });
      try {
        progress('starting the engine without a prefix cache and the engine with one');
        workers.push(await start(0));
        workers.push(await start(flags.prefixCacheMb));
        const report = await runPrefixCacheBench({
          baselineUrl: workers[0]!.url,
          cachedUrl: workers[1]!.url,
          headers: { 'Content-Type': 'application/json' },
          vocabulary: config.vocab_size,
          ...flags,
          onProgress: progress,
        });
        process.stdout.write(
          flags.json
            ? `${JSON.stringify({ model: flags.model, ...report }, null, 2)}\n`
            : renderPrefixCacheBench(report),
        );
      } finally {
        unregister();
        await Promise.all(workers.map((worker) => worker.stop()));
      }
    });
}
