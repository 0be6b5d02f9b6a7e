/**
 * Supervisor of the embedded PyTorch worker (`python3 -m agentmath_engine`): starts it, waits
 * until `/health` answers, forwards its log lines, restarts it on the same port when it
 * crashes after it served (never one that failed to start, or that refused its arguments with
 * exit 2), and stops it cleanly (SIGTERM, then SIGKILL after a grace period). It does not
 * speak the worker's API: use the SGLang engine client and the trainer client on `url`.
 * The worker applies `checkBindAuth`'s rule itself (it binds the address): with `apiKey`, every
 * route but `/health` needs it as a bearer token. The key reaches the worker in its
 * environment (`AGENTMATH_ENGINE_API_KEY`), never on its command line, where `ps` shows it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { checkBindAuth } from '../../shared/bind-auth.ts';
import { HUB_OFFLINE_ENVIRONMENT, trainerPython } from '../../shared/python-environments.ts';

/** The worker could not be started or did not become healthy in time. */
export class WorkerStartError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('WORKER_START_FAILED', message, options);
  }
}

export type WorkerEvent =
  | { type: 'worker-listening'; port: number; pid: number }
  | { type: 'worker-healthy'; url: string }
  | { type: 'worker-exit'; code: number | null; signal: string | null; expected: boolean }
  | { type: 'worker-restart'; attempt: number; delayMs: number }
  | { type: 'worker-gave-up'; restarts: number };

export type EmbeddedWorkerOptions = {
  /** A model folder (the byte model or any Hugging Face causal LM), or a byte-model shape (`tiny`, the default; `test`) for a random-init model. */
  model?: string;
  /** Default 127.0.0.1; any other address needs `apiKey` or `noAuth`. */
  host?: string;
  /** Required as `Authorization: Bearer <apiKey>` on every route but `/health`. Empty is refused. */
  apiKey?: string;
  /** Serve a non-loopback host without a key (a warning is logged). Default false. */
  noAuth?: boolean;
  /** 0 (default) picks a free port on the first start; restarts reuse it. */
  port?: number;
  /** Python interpreter; default `$AGENTMATH_PYTHON` or the project's `.venv/bin/python`. */
  python?: string;
  maxRunningRequests?: number;
  decodeThreads?: number;
  /** The initial weights' seed of a byte-model shape. */
  seed?: number;
  /** More worker arguments, passed through verbatim. */
  extraArgs?: string[];
  startupTimeoutMs?: number;
  /** Restart after a crash (default true), at most `maxRestarts` times in a row (default 5). */
  restart?: boolean;
  maxRestarts?: number;
  /** Receives each line the worker writes (its logs go to stderr). */
  onLog?: (line: string, stream: 'stdout' | 'stderr') => void;
  onEvent?: (event: WorkerEvent) => void;
};

export type EmbeddedWorker = {
  /** Base URL, e.g. `http://127.0.0.1:40123`; stable across restarts. */
  readonly url: string;
  readonly port: number;
  /** Process id of the current worker process (changes on restart). */
  pid(): number | undefined;
  restarts(): number;
  /** Stops the worker and any pending restart; resolves once the process has exited. */
  stop(): Promise<void>;
};

/** The environment variable that carries the worker's API key (also read by `engine serve`). */
export const ENGINE_API_KEY_VARIABLE = 'AGENTMATH_ENGINE_API_KEY';

/** The worker's status for arguments it refuses. */
const USAGE_EXIT_CODE = 2;

const PYTHON_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'python');

/** Default interpreter: the project's locked environment with PyTorch (`scripts/setup.sh`). */
export function defaultPython(): string {
  return trainerPython();
}

/** Starts the worker and resolves once it answers `/health`. */
export async function startEmbeddedWorker(options: EmbeddedWorkerOptions = {}): Promise<EmbeddedWorker> {
  const { host = '127.0.0.1', startupTimeoutMs = 120_000, restart = true, maxRestarts = 5 } = options;
  const emit = options.onEvent ?? (() => {});
  const warning = checkBindAuth({
    server: 'engine serve',
    host,
    token: options.apiKey,
    tokenSource: `--api-key or ${ENGINE_API_KEY_VARIABLE}`,
    noAuth: options.noAuth ?? false,
    risk: 'can generate and load new weights',
  });
  if (warning !== null) options.onLog?.(warning, 'stderr');
  let port = options.port ?? 0;
  let child: ChildProcess | undefined;
  let stopping = false;
  let started = false;
  let restartCount = 0;
  let consecutive = 0;
  let restartTimer: NodeJS.Timeout | undefined;
  let exited: Promise<void> = Promise.resolve();

  const launch = async (): Promise<number> => {
    const python = options.python ?? defaultPython();
    if (python.startsWith('/') && !existsSync(python)) {
      throw new WorkerStartError(
        `Python interpreter ${python} not found; run: bash scripts/setup.sh (or set AGENTMATH_PYTHON)`,
      );
    }
    const env: NodeJS.ProcessEnv = {
      // No progress bars in a server's log (transformers' "Loading weights" bar, whose carriage
      // returns read as empty lines); a user's own setting wins.
      HF_HUB_DISABLE_PROGRESS_BARS: '1',
      TQDM_DISABLE: '1',
      ...process.env,
      PYTHONPATH: joinPythonPath(process.env.PYTHONPATH),
      PYTHONUNBUFFERED: '1',
      ...HUB_OFFLINE_ENVIRONMENT,
      // The worker exits when this process is gone, kill -9 included (parent_watch.py).
      AGENTMATH_PARENT_PID: String(process.pid),
    };
    // Only the key given here: one inherited from this process's environment would lock out its clients.
    if (options.apiKey === undefined) delete env[ENGINE_API_KEY_VARIABLE];
    else env[ENGINE_API_KEY_VARIABLE] = options.apiKey;
    const process_ = spawn(python, ['-m', 'agentmath_engine', ...workerArguments(options, host, port)], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = process_;
    const recentLines: string[] = [];
    const remember = (line: string) => {
      recentLines.push(line);
      if (recentLines.length > 20) recentLines.shift();
    };
    exited = new Promise((resolve) => process_.once('exit', () => resolve()));
    const listening = new Promise<number>((resolve, reject) => {
      const stdout = createInterface({ input: process_.stdout! });
      stdout.on('line', (line) => {
        const announced = parseListening(line);
        if (announced !== null) resolve(announced);
        else options.onLog?.(line, 'stdout');
      });
      createInterface({ input: process_.stderr! }).on('line', (line) => {
        remember(line);
        options.onLog?.(line, 'stderr');
      });
      process_.once('error', (error) =>
        reject(new WorkerStartError(`cannot run ${python}: ${error.message}`, { cause: error })),
      );
      process_.once('exit', (code, signal) =>
        reject(
          new WorkerStartError(
            `the worker exited (code ${code}, signal ${signal}) before listening:\n${recentLines.join('\n')}`,
          ),
        ),
      );
    });
    listening.catch(() => {}); // settled by the race below; a late rejection is not an error
    process_.once('exit', (code, signal) => {
      const expected = stopping;
      emit({ type: 'worker-exit', code, signal, expected });
      // Not restarted: a worker that never served (the start reports it), or one that refused
      // its arguments (exit 2: the same arguments would be refused again).
      if (!expected && restart && child === process_ && started && code !== USAGE_EXIT_CODE)
        scheduleRestart();
    });
    const announcedPort = await withTimeout(
      listening,
      startupTimeoutMs,
      `the worker did not listen within ${startupTimeoutMs} ms`,
    );
    emit({ type: 'worker-listening', port: announcedPort, pid: process_.pid ?? -1 });
    await waitHealthy(`http://${host}:${announcedPort}`, startupTimeoutMs);
    emit({ type: 'worker-healthy', url: `http://${host}:${announcedPort}` });
    started = true;
    consecutive = 0;
    return announcedPort;
  };

  const scheduleRestart = () => {
    if (stopping) return;
    if (consecutive >= maxRestarts) {
      emit({ type: 'worker-gave-up', restarts: restartCount });
      return;
    }
    consecutive += 1;
    restartCount += 1;
    const delayMs = Math.min(10_000, 250 * 2 ** (consecutive - 1));
    emit({ type: 'worker-restart', attempt: consecutive, delayMs });
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      launch().catch((error: unknown) => {
        options.onLog?.(`restart failed: ${(error as Error).message}`, 'stderr');
        if (child?.exitCode === null) child.kill('SIGKILL');
      });
    }, delayMs);
  };

  const stop = async (): Promise<void> => {
    stopping = true;
    if (restartTimer) clearTimeout(restartTimer);
    const current = child;
    if (!current || current.exitCode !== null || current.signalCode !== null) return;
    current.kill('SIGTERM');
    const killer = setTimeout(() => current.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  };

  try {
    port = await launch();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url: `http://${host}:${port}`,
    port,
    pid: () => child?.pid,
    restarts: () => restartCount,
    stop,
  };
}

function workerArguments(options: EmbeddedWorkerOptions, host: string, port: number): string[] {
  const args = ['--model', options.model ?? 'tiny', '--host', host, '--port', String(port)];
  const numeric: Array<[string, number | undefined]> = [
    ['--max-running-requests', options.maxRunningRequests],
    ['--decode-threads', options.decodeThreads],
    ['--seed', options.seed],
  ];
  for (const [flag, value] of numeric) if (value !== undefined) args.push(flag, String(value));
  if (options.noAuth === true) args.push('--no-auth');
  return [...args, ...(options.extraArgs ?? [])];
}

function joinPythonPath(existing: string | undefined): string {
  return existing ? `${PYTHON_DIR}:${existing}` : PYTHON_DIR;
}

function parseListening(line: string): number | null {
  if (!line.startsWith('{')) return null;
  try {
    const parsed = JSON.parse(line) as { event?: unknown; port?: unknown };
    return parsed.event === 'listening' && typeof parsed.port === 'number' ? parsed.port : null;
  } catch {
    return null;
  }
}

async function waitHealthy(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5_000) });
      await response.arrayBuffer();
      if (response.ok) return;
      lastError = `HTTP ${response.status}`;
    } catch (error) {
      lastError = (error as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new WorkerStartError(`the worker at ${url} was not healthy within ${timeoutMs} ms (${lastError})`);
}

async function withTimeout<T>(promise: Promise<T>, timeoutMs: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WorkerStartError(message)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
