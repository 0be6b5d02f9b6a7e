/**
 * Sends a run's per-step scalars to Weights & Biases through a Python sidecar
 * (`python -m agentmath_train.wandb_logger`, run with the trainer's interpreter), which reads
 * JSON lines on stdin (protocol in its header). Offline by default: `WANDB_MODE=offline` unless
 * the user set WANDB_MODE; the run lands in `<folder>/wandb/` and `wandb sync` uploads it.
 * wandb is optional and not in uv.lock: opening fails at once with WANDB_UNAVAILABLE and the
 * command that installs it. The API key is wandb's business (WANDB_API_KEY passes through the
 * environment); it never appears in a message, an argument or a file of ours.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { PROJECT_ROOT, trainerPython } from '../shared/python-environments.ts';
import type { MetricsLogger } from './types.ts';

/** `import wandb` failed in the trainer's environment; the message says how to install it. */
export class WandbUnavailableError extends AgentMathError {
  constructor(message: string) {
    super('WANDB_UNAVAILABLE', message);
  }
}

/** The sidecar could not start a run, or stopped while the run was logging. */
export class WandbLoggerError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('WANDB_LOGGER_FAILED', message, options);
  }
}

export type WandbLoggerOptions = {
  /** The run folder; wandb writes under `<folder>/wandb/`. */
  folder: string;
  runName: string;
  /** The resolved configuration (secrets already redacted). */
  config: unknown;
  /** Default `$WANDB_PROJECT`, else `agentmath`. */
  project?: string;
  python?: string;
  /** The sidecar's environment before our additions (default this process's). */
  environment?: NodeJS.ProcessEnv;
  startupTimeoutMs?: number;
  /** The sidecar's other output (wandb's own messages), line by line. */
  onLog?: (line: string) => void;
};

/** What the sidecar says on stdout (its other lines are wandb's). */
const sidecarMessageSchema = z.discriminatedUnion('event', [
  z.object({ event: z.literal('ready'), mode: z.string(), dir: z.string() }),
  z.object({ event: z.literal('error'), code: z.string(), message: z.string() }),
]);

/** JSON has no NaN or Infinity; the sidecar reads these strings back as floats. */
function jsonNumber(value: number): number | string {
  return Number.isFinite(value) ? value : String(value);
}

/** Starts the sidecar and resolves once its wandb run is open. */
export async function openWandbLogger(options: WandbLoggerOptions): Promise<MetricsLogger> {
  const { folder, runName, config, startupTimeoutMs = 120_000, onLog = () => {} } = options;
  const base = options.environment ?? process.env;
  const environment: NodeJS.ProcessEnv = {
    ...base,
    PYTHONPATH: [join(PROJECT_ROOT, 'python'), base.PYTHONPATH].filter(Boolean).join(':'),
    PYTHONUNBUFFERED: '1',
    WANDB_MODE: base.WANDB_MODE !== undefined && base.WANDB_MODE !== '' ? base.WANDB_MODE : 'offline',
  };
  const project = options.project ?? (base.WANDB_PROJECT || 'agentmath');
  const child: ChildProcess = spawn(
    options.python ?? trainerPython(base),
    ['-m', 'agentmath_train.wandb_logger'],
    { env: environment, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const tail: string[] = [];
  const remember = (line: string) => {
    tail.push(line);
    if (tail.length > 20) tail.shift();
    onLog(line);
  };
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      exitCode = code;
      resolve(code);
    }),
  );
  const spawnFailed = new Promise<Error>((resolve) => child.once('error', resolve));
  if (child.stderr) createInterface({ input: child.stderr }).on('line', remember);
  // The start message waits in the pipe until the sidecar has imported wandb.
  child.stdin?.on('error', () => {}); // a sidecar that exits early closes the pipe; `exited` reports it
  child.stdin?.write(`${JSON.stringify({ type: 'start', name: runName, dir: folder, project, config })}\n`);
  const answer = new Promise<{ mode: string; dir: string } | Error>((resolve) => {
    if (!child.stdout) return resolve(new WandbLoggerError('the wandb sidecar has no stdout'));
    createInterface({ input: child.stdout }).on('line', (line) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        parsed = undefined;
      }
      const message = sidecarMessageSchema.safeParse(parsed);
      if (message.success && message.data.event === 'ready') resolve(message.data);
      else if (message.success && message.data.event === 'error')
        resolve(
          message.data.code === 'WANDB_UNAVAILABLE'
            ? new WandbUnavailableError(message.data.message)
            : new WandbLoggerError(message.data.message),
        );
      else remember(line);
    });
  });
  let timer: NodeJS.Timeout | undefined;
  const started = await Promise.race([
    answer,
    exited.then(
      (code) =>
        new WandbLoggerError(`the wandb sidecar exited (${code}) before it was ready: ${tail.join('\n')}`),
    ),
    spawnFailed.then(
      (error) =>
        new WandbLoggerError(`cannot start ${options.python ?? trainerPython(base)}: ${error.message}`, {
          cause: error,
        }),
    ),
    new Promise<Error>((resolve) => {
      timer = setTimeout(
        () => resolve(new WandbLoggerError(`the wandb sidecar was not ready after ${startupTimeoutMs} ms`)),
        startupTimeoutMs,
      );
    }),
  ]);
  clearTimeout(timer);
  if (started instanceof Error) {
    child.kill('SIGKILL');
    await exited;
    throw started;
  }
  const failure = () =>
    new WandbLoggerError(`the wandb sidecar stopped (exit ${exitCode}): ${tail.join('\n')}`);
  let closed = false;
  return {
    location: started.dir,
    log(step, scalars) {
      if (closed) throw new WandbLoggerError(`the wandb logger of ${runName} is closed`);
      if (exitCode !== undefined) throw failure();
      const values = Object.fromEntries(
        Object.entries(scalars).map(([tag, value]) => [tag, jsonNumber(value)]),
      );
      return new Promise<void>((resolve, reject) => {
        child.stdin?.write(`${JSON.stringify({ type: 'log', step, scalars: values })}\n`, (error) =>
          error
            ? reject(
                new WandbLoggerError(`cannot write to the wandb sidecar: ${error.message}`, { cause: error }),
              )
            : resolve(),
        );
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      child.stdin?.end();
      const code = await exited;
      if (code !== 0) throw failure();
    },
  };
}
