import type { Command } from 'commander';
import {
  benchEngine,
  ENGINE_API_KEY_VARIABLE,
  startEmbeddedWorker,
  type WorkerEvent,
} from '../../engine/embedded/index.ts';

type ServeOptions = {
  model: string;
  port: string;
  host: string;
  apiKey?: string;
  auth: boolean;
  maxRunningRequests?: string;
  decodeThreads?: string;
  trainThreads?: string;
  seed?: string;
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

function numberOption(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isFinite(parsed)) throw new Error(`${name} must be a number, got ${JSON.stringify(value)}`);
  return parsed;
}

/** `agentmath engine serve`: the embedded PyTorch worker behind SGLang's routes. */
export function registerEngine(program: Command): void {
  const engine = program.command('engine').description('the embedded PyTorch engine and trainer');
  engine
    .command('serve')
    .description('start the embedded worker (SGLang /generate + training routes), restart it if it crashes')
    .option('--model <name|path>', 'tiny, test, a saved model folder, or a Hugging Face folder', 'tiny')
    .option('--port <n>', 'port (0 picks a free one)', '30000')
    .option('--host <host>', 'address to bind (any but loopback needs --api-key or --no-auth)', '127.0.0.1')
    .option(
      '--api-key <key>',
      `require this bearer token on every route but /health (default: ${ENGINE_API_KEY_VARIABLE}); empty is refused`,
    )
    .option('--no-auth', 'serve a non-loopback --host without a key (printed as a warning)')
    .option('--max-running-requests <n>', 'sequences decoded together')
    .option('--decode-threads <n>', 'torch threads while generating')
    .option('--train-threads <n>', 'torch threads while training')
    .option('--seed <n>', 'initialisation seed of a preset model')
    .action(async (options: ServeOptions) => {
      const log = (line: string) => process.stderr.write(`${line}\n`);
      const maxRunningRequests = numberOption(options.maxRunningRequests, '--max-running-requests');
      const decodeThreads = numberOption(options.decodeThreads, '--decode-threads');
      const trainThreads = numberOption(options.trainThreads, '--train-threads');
      const seed = numberOption(options.seed, '--seed');
      const apiKey = options.apiKey ?? process.env[ENGINE_API_KEY_VARIABLE];
      const worker = await startEmbeddedWorker({
        model: options.model,
        host: options.host,
        ...(apiKey === undefined ? {} : { apiKey }),
        noAuth: !options.auth,
        port: numberOption(options.port, '--port') ?? 30000,
        ...(maxRunningRequests === undefined ? {} : { maxRunningRequests }),
        ...(decodeThreads === undefined ? {} : { decodeThreads }),
        ...(trainThreads === undefined ? {} : { trainThreads }),
        ...(seed === undefined ? {} : { seed }),
        onLog: (line) => log(`[worker] ${line}`),
        onEvent: (event) => log(`[engine] ${describe(event)}`),
      });
      process.stdout.write(`${worker.url}\n`);
      await new Promise<void>((resolve) => {
        const shutdown = () => resolve();
        process.once('SIGINT', shutdown);
        process.once('SIGTERM', shutdown);
      });
      log('[engine] stopping');
      await worker.stop();
    });
}

/** `agentmath bench engine`: generation tokens/s at batch 1/16/64 and SFT step time. */
export function registerEngineBench(bench: Command): void {
  bench
    .command('engine')
    .description(
      'embedded engine: generation tokens/s at batch 1, 16, 64 (baseline: batch 1) and SFT step time',
    )
    .option('--model <name|path>', 'model to serve', 'tiny')
    .option(
      '--url <url>',
      'measure a worker already running here instead (it gets trained; its key from AGENTMATH_ENGINE_API_KEY)',
    )
    .option('--batches <list>', 'batch sizes', '1,16,64')
    .option('--new-tokens <n>', 'tokens generated per request', '256')
    .option('--prompt-tokens <n>', 'prompt length', '100')
    .option('--rounds <n>', 'repetitions per batch size', '3')
    .option('--sft-steps <n>', 'SFT steps to time (0 skips)', '5')
    .option('--decode-threads <n>', 'torch threads while generating')
    .option('--train-threads <n>', 'torch threads while training')
    .option('--json', 'print the figures as JSON')
    .action(async (options: Record<string, string | boolean | undefined>) => {
      const text = (key: string) => (typeof options[key] === 'string' ? (options[key] as string) : undefined);
      const decodeThreads = numberOption(text('decodeThreads'), '--decode-threads');
      const trainThreads = numberOption(text('trainThreads'), '--train-threads');
      const apiKey = process.env[ENGINE_API_KEY_VARIABLE] || undefined;
      const worker = text('url')
        ? null
        : await startEmbeddedWorker({
            model: text('model') ?? 'tiny',
            port: 0,
            restart: false,
            ...(decodeThreads === undefined ? {} : { decodeThreads }),
            ...(trainThreads === undefined ? {} : { trainThreads }),
          });
      try {
        const report = await benchEngine({
          url: worker?.url ?? text('url')!,
          ...(worker === null && apiKey !== undefined ? { apiKey } : {}),
          batchSizes: (text('batches') ?? '1,16,64')
            .split(',')
            .map((item) => numberOption(item.trim(), '--batches')!),
          newTokens: numberOption(text('newTokens'), '--new-tokens') ?? 256,
          promptTokens: numberOption(text('promptTokens'), '--prompt-tokens') ?? 100,
          rounds: numberOption(text('rounds'), '--rounds') ?? 3,
          sftSteps: numberOption(text('sftSteps'), '--sft-steps') ?? 5,
          onProgress: options.json ? () => {} : (message) => process.stderr.write(`${message}\n`),
        });
        if (options.json) {
          process.stdout.write(`${JSON.stringify({ model: text('model') ?? 'tiny', ...report }, null, 2)}\n`);
          return;
        }
        const rows: [string, string][] = report.generation.map((figures) => [
          `generate · batch ${figures.batchSize}`,
          `${figures.tokensPerSecondP50.toFixed(0)} tok/s p50 (min ${figures.tokensPerSecondMin.toFixed(0)}), ` +
            `request p50 ${figures.requestSecondsP50.toFixed(2)} s / p99 ${figures.requestSecondsP99.toFixed(2)} s` +
            (figures.ratioToBatch1 === null ? '' : `, ×${figures.ratioToBatch1.toFixed(1)} vs batch 1`),
        ]);
        if (report.sft) {
          rows.push([
            `sft step · ${report.sft.sequences} × ${report.sft.tokensPerStep / report.sft.sequences} tokens`,
            `p50 ${report.sft.stepMsP50.toFixed(0)} ms / p99 ${report.sft.stepMsP99.toFixed(0)} ms, ` +
              `${report.sft.tokensPerSecondP50.toFixed(0)} tok/s`,
          ]);
        }
        const width = Math.max(...rows.map((row) => row[0].length));
        for (const [name, value] of rows) process.stdout.write(`${name.padEnd(width)}  ${value}\n`);
        process.stdout.write(
          `(prompt ${report.promptTokens} tokens, ${report.newTokens} new tokens per request, ${report.rounds} rounds; shared machines make these noisy)\n`,
        );
      } finally {
        await worker?.stop();
      }
    });
}
