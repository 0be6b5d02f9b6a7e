/**
 * Starts the distributed trainer on this machine: `torchrun --nproc-per-node P -m
 * agentmath_train serve` from the project's locked environment (through
 * `agentmath_train.torchrun`, which exits with this process; one rank runs without torchrun),
 * waits for rank 0's ready line
 * (which names the port it bound), and stops every rank on `stop()` (a /shutdown, then the
 * processes are killed if they linger). An aborted `signal` stops the start at once. A start
 * that fails says the rank's own error first (its `start-failed` line), then torchrun's last
 * lines. torchrun's multi-node flags pass through `torchrunArgs`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { descendantsOf } from '../shared/process-descendants.ts';
import { PROJECT_ROOT, trainerPython } from '../shared/python-environments.ts';
import { DistributedTrainerClient } from './distributed-trainer-client.ts';

export class TrainerStartError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('TRAINER_START_FAILED', message, options);
  }
}

/** The start was stopped by the caller's signal (SIGTERM, Ctrl-C) before the trainer listened. */
export class TrainerStartStoppedError extends AgentMathError {
  constructor(reason: unknown) {
    super('TRAINER_START_STOPPED', `the trainer's start was stopped (${String(reason)}); no rank is left`);
  }
}

export type TrainerServiceOptions = {
  model: string;
  /** The KL reference's folder (default: the model). */
  reference?: string;
  /** Processes on this node (default 1). */
  processes?: number;
  host?: string;
  /** 0 (default): a free port. */
  port?: number;
  /** Bearer token the service requires (sent in AGENTMATH_TRAINER_TOKEN, never on argv). */
  token?: string;
  noAuth?: boolean;
  microBatchTokens?: number;
  activationCheckpointing?: boolean;
  /** Tokens per LM-head chunk when scoring (0: full [T × V] logits; default the trainer's, 512). */
  logitsChunkTokens?: number;
  /** GiB one rank may hold (default the device's memory); a step estimated above it is refused. */
  memoryLimitGb?: number;
  /** Ranks that split each packed row (sequence parallelism, `--sp`; default 1). */
  sequenceParallel?: number;
  seed?: number;
  /** Torch threads of each CPU rank (default 0: its share of the machine's cores). */
  threads?: number;
  /** The forward and backward's dtype (default: bf16 on a GPU, fp32 on CPU). */
  computeDtype?: 'float32' | 'bfloat16';
  /** Sharded parameters, gradients and optimizer state in host memory (GPU ranks; nothing changes on CPU ranks). */
  cpuOffload?: boolean;
  /** More torchrun arguments (multi-node: --nnodes, --node-rank, --rdzv-endpoint, …). */
  torchrunArgs?: string[];
  python?: string;
  startupTimeoutMs?: number;
  onLog?: (line: string) => void;
  /** Aborting it before rank 0 listens kills every process started and rejects the start. */
  signal?: AbortSignal;
};

export type TrainerService = {
  /** Rank 0's address; empty on another node of a multi-node job (it serves nothing). */
  readonly url: string;
  readonly client: DistributedTrainerClient;
  readonly pid: number | undefined;
  /** Resolves when the process group has exited, with its exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  stop(): Promise<void>;
};

/**
 * The interpreter's argv: `agentmath_train serve` with every option given, under torchrun when
 * the job has more than one rank (or torchrun's own arguments are given). One rank runs alone:
 * no launcher process and no rendezvous, a group of one over an in-memory store (service.py).
 */
export function trainerServeArgs(
  options: TrainerServiceOptions & { processes: number; host: string; port: number },
): string[] {
  const launcher =
    options.processes === 1 && options.torchrunArgs === undefined
      ? []
      : [
          '-m',
          'agentmath_train.torchrun',
          '--nproc-per-node',
          String(options.processes),
          ...(options.torchrunArgs ?? ['--standalone']),
        ];
  return [
    ...launcher,
    '-m',
    'agentmath_train',
    'serve',
    '--model',
    options.model,
    '--host',
    options.host,
    '--port',
    String(options.port),
    ...(options.reference === undefined ? [] : ['--reference', options.reference]),
    ...(options.microBatchTokens === undefined
      ? []
      : ['--micro-batch-tokens', String(options.microBatchTokens)]),
    ...(options.activationCheckpointing ? ['--activation-checkpointing'] : []),
    ...(options.logitsChunkTokens === undefined
      ? []
      : ['--logits-chunk-tokens', String(options.logitsChunkTokens)]),
    ...(options.memoryLimitGb === undefined || options.memoryLimitGb === 0
      ? []
      : ['--memory-limit-gb', String(options.memoryLimitGb)]),
    ...(options.sequenceParallel === undefined || options.sequenceParallel === 1
      ? []
      : ['--sp', String(options.sequenceParallel)]),
    ...(options.seed === undefined ? [] : ['--seed', String(options.seed)]),
    ...(options.threads === undefined || options.threads === 0 ? [] : ['--threads', String(options.threads)]),
    ...(options.computeDtype === undefined ? [] : ['--compute-dtype', options.computeDtype]),
    ...(options.cpuOffload ? ['--cpu-offload'] : []),
    ...(options.noAuth ? ['--no-auth'] : []),
  ];
}

/** A Python exception's last line (`OSError: …`, `safetensors_rust.SafetensorError: …`). */
const EXCEPTION_LINE = /^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Interrupt): /;

/**
 * Why a start failed, the cause first: each rank's own error (its `start-failed` line), else
 * the last Python exception line in the output, then torchrun's last lines for the context.
 */
export function startFailure(
  code: number | null,
  rankErrors: string[],
  tail: string[],
  model: string,
): string {
  const exception = [...tail].reverse().find((line) => EXCEPTION_LINE.test(line.trim()));
  const cause =
    rankErrors.length > 0 ? rankErrors.join('\n') : (exception?.trim() ?? 'no error was reported by a rank');
  return (
    `the trainer (model ${model}) exited (code ${code}) before it listened: ${cause}\n` +
    `torchrun's last lines:\n${tail.slice(-10).join('\n')}`
  );
}

/** Starts the service and resolves once rank 0 listens. */
export async function startTrainerService(options: TrainerServiceOptions): Promise<TrainerService> {
  const {
    processes = 1,
    host = '127.0.0.1',
    port = 0,
    startupTimeoutMs = 300_000,
    onLog = () => {},
    signal,
  } = options;
  if (signal?.aborted) throw new TrainerStartStoppedError(signal.reason);
  const serveArgs = trainerServeArgs({ ...options, processes, host, port });
  const environment: NodeJS.ProcessEnv = {
    ...process.env,
    PYTHONPATH: join(PROJECT_ROOT, 'python'),
    PYTHONUNBUFFERED: '1',
    HF_HUB_DISABLE_PROGRESS_BARS: '1',
    HF_HUB_OFFLINE: '1',
    TRANSFORMERS_VERBOSITY: 'error',
    // Every rank exits when this process is gone, kill -9 included (service.py's watch_parent).
    AGENTMATH_PARENT_PID: String(process.pid),
  };
  if (options.token === undefined) delete environment.AGENTMATH_TRAINER_TOKEN;
  else environment.AGENTMATH_TRAINER_TOKEN = options.token;
  const child: ChildProcess = spawn(options.python ?? trainerPython(), serveArgs, {
    env: environment,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const tail: string[] = [];
  /** Each rank's own start error (`{"event": "start-failed"}` lines), in the order they came. */
  const rankErrors: string[] = [];
  const remember = (line: string) => {
    tail.push(line);
    if (tail.length > 40) tail.shift();
    onLog(line);
  };
  if (child.stderr) createInterface({ input: child.stderr }).on('line', remember);
  const ready = new Promise<number>((resolve, reject) => {
    if (!child.stdout) return reject(new TrainerStartError('the trainer has no stdout'));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('{"event": "ready"')) {
        try {
          const ready = JSON.parse(line) as { port?: number; role?: string };
          // A node other than rank 0's serves nothing: it joined, and follows rank 0's commands.
          resolve(ready.role === 'follower' ? -1 : Number(ready.port));
        } catch (error) {
          reject(new TrainerStartError(`unreadable ready line: ${line}`, { cause: error }));
        }
      } else if (line.startsWith('{"event": "start-failed"')) {
        try {
          const failed = JSON.parse(line) as { rank?: number; error?: string };
          rankErrors.push(`rank ${failed.rank ?? '?'}: ${failed.error ?? line}`);
        } catch {
          remember(line);
        }
      } else remember(line);
    });
    child.once('error', (error) =>
      reject(new TrainerStartError(`cannot start ${trainerPython()}`, { cause: error })),
    );
    void exited.then((code) =>
      reject(new TrainerStartError(startFailure(code, rankErrors, tail, options.model))),
    );
  });
  // torchrun's group, and every rank (each runs in a session of its own, out of that group):
  // the ranks are found before torchrun dies, while they are still its children.
  const killGroup = () => {
    if (child.pid === undefined) return;
    const ranks = descendantsOf(child.pid);
    for (const target of [-child.pid, ...ranks]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    onAbort = () => reject(new TrainerStartStoppedError(signal?.reason));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new TrainerStartError(`the trainer did not listen within ${startupTimeoutMs} ms`)),
      startupTimeoutMs,
    );
  });
  let boundPort: number;
  try {
    boundPort = await Promise.race([ready, timeout, stopped]);
  } catch (error) {
    killGroup();
    if (child.pid !== undefined) await exited;
    throw error;
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
  }
  const visibleHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const url =
    boundPort === -1
      ? ''
      : `http://${visibleHost.includes(':') ? `[${visibleHost}]` : visibleHost}:${boundPort}`;
  const client = new DistributedTrainerClient({
    baseUrl: url,
    ...(options.token ? { token: options.token } : {}),
  });
  const exitOnParentExit = () => killGroup();
  process.once('exit', exitOnParentExit);
  return {
    url,
    client,
    pid: child.pid,
    exited,
    async stop() {
      process.off('exit', exitOnParentExit);
      if (child.exitCode === null) {
        let wait: NodeJS.Timeout | undefined;
        await Promise.race([
          client.shutdown().catch(() => {}),
          new Promise((resolve) => {
            wait = setTimeout(resolve, 30_000);
          }),
        ]);
        clearTimeout(wait);
        const grace = setTimeout(killGroup, 15_000);
        await exited;
        clearTimeout(grace);
      }
    },
  };
}
