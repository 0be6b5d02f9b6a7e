/**
 * Starts the distributed trainer on this machine: `torchrun --nproc-per-node P -m
 * agentmath_train serve` from the project's locked environment, waits for rank 0's ready line
 * (which names the port it bound), and stops every rank on `stop()` (a /shutdown, then the
 * process group is killed if it lingers). torchrun's multi-node flags pass through `torchrunArgs`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { PROJECT_ROOT, trainerPython } from '../shared/python-environments.ts';
import { DistributedTrainerClient } from './distributed-trainer-client.ts';

export class TrainerStartError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('TRAINER_START_FAILED', message, options);
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
  seed?: number;
  /** The forward and backward's dtype (default: bf16 on a GPU, fp32 on CPU). */
  computeDtype?: 'float32' | 'bfloat16';
  /** More torchrun arguments (multi-node: --nnodes, --node-rank, --rdzv-endpoint, …). */
  torchrunArgs?: string[];
  python?: string;
  startupTimeoutMs?: number;
  onLog?: (line: string) => void;
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

/** Starts the service and resolves once rank 0 listens. */
export async function startTrainerService(options: TrainerServiceOptions): Promise<TrainerService> {
  const {
    model,
    processes = 1,
    host = '127.0.0.1',
    port = 0,
    startupTimeoutMs = 300_000,
    onLog = () => {},
  } = options;
  const serveArgs = [
    '-m',
    'torch.distributed.run',
    '--nproc-per-node',
    String(processes),
    ...(options.torchrunArgs ?? ['--standalone']),
    '-m',
    'agentmath_train',
    'serve',
    '--model',
    model,
    '--host',
    host,
    '--port',
    String(port),
    ...(options.reference === undefined ? [] : ['--reference', options.reference]),
    ...(options.microBatchTokens === undefined
      ? []
      : ['--micro-batch-tokens', String(options.microBatchTokens)]),
    ...(options.activationCheckpointing ? ['--activation-checkpointing'] : []),
    ...(options.seed === undefined ? [] : ['--seed', String(options.seed)]),
    ...(options.computeDtype === undefined ? [] : ['--compute-dtype', options.computeDtype]),
    ...(options.noAuth ? ['--no-auth'] : []),
  ];
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
      } else remember(line);
    });
    child.once('error', (error) =>
      reject(new TrainerStartError(`cannot start ${trainerPython()}`, { cause: error })),
    );
    void exited.then((code) =>
      reject(
        new TrainerStartError(
          `the trainer exited (code ${code}) before it listened; last lines:\n${tail.slice(-15).join('\n')}`,
        ),
      ),
    );
  });
  const killGroup = () => {
    if (child.pid !== undefined && child.exitCode === null) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new TrainerStartError(`the trainer did not listen within ${startupTimeoutMs} ms`)),
      startupTimeoutMs,
    );
  });
  let boundPort: number;
  try {
    boundPort = await Promise.race([ready, timeout]);
  } catch (error) {
    killGroup();
    throw error;
  } finally {
    clearTimeout(timer);
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
