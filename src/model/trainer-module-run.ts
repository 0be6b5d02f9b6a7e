/**
 * One run of `python -m agentmath_train COMMAND …` (the `model init` and `model import` work) as
 * a child that never outlives the caller: it is told the caller's pid (`AGENTMATH_PARENT_PID`,
 * watched on the Python side, so a kill -9 of the CLI ends it too), and an abort of `signal`
 * sends it SIGTERM — its `finally` blocks remove what it half wrote — and waits until it has
 * exited before the promise settles (SIGKILL after `STOP_GRACE_MS`). Output is collected whole.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { HUB_OFFLINE_ENVIRONMENT, PROJECT_ROOT, trainerPython } from '../shared/python-environments.ts';

/** How long a stopped child gets to clean up before SIGKILL. */
const STOP_GRACE_MS = 8_000;

export type TrainerModuleOutcome = {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
};

/** Thrown when `signal` stopped the child; it has exited when this is thrown. */
export class ModelCommandStopped extends AgentMathError {
  constructor(command: string, reason: unknown) {
    super(
      'MODEL_COMMAND_STOPPED',
      `${command} was stopped by ${String(reason)} before it finished; nothing was left half-written`,
    );
  }
}

export type TrainerModuleRunOptions = {
  /** The command as the user typed it, for messages (`model import`). */
  command: string;
  /** Arguments after `-m agentmath_train`. */
  args: string[];
  /** Aborting it stops the child (see the header). */
  signal?: AbortSignal;
  timeoutMs: number;
};

/** Runs the module to its end; a child stopped by `signal` throws `ModelCommandStopped`. */
export async function runTrainerModule({
  command,
  args,
  signal,
  timeoutMs,
}: TrainerModuleRunOptions): Promise<TrainerModuleOutcome> {
  if (signal?.aborted) throw new ModelCommandStopped(command, signal.reason);
  const child = spawn(trainerPython(), ['-m', 'agentmath_train', ...args], {
    env: {
      ...process.env,
      PYTHONPATH: join(PROJECT_ROOT, 'python'),
      ...HUB_OFFLINE_ENVIRONMENT,
      TQDM_DISABLE: '1',
      AGENTMATH_PARENT_PID: String(process.pid),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let stopped = false;
  let timedOut = false;
  let killTimer: NodeJS.Timeout | undefined;
  const stop = () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    killTimer ??= setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  };
  const onAbort = () => {
    stopped = true;
    stop();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  const deadline = setTimeout(() => {
    timedOut = true;
    stop();
  }, timeoutMs);
  try {
    const ended = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
      (resolve, reject) => {
        child.once('error', reject);
        child.once('close', (code, exitSignal) => resolve({ code, signal: exitSignal }));
      },
    );
    if (stopped) throw new ModelCommandStopped(command, signal?.reason);
    if (timedOut)
      throw new AgentMathError(
        'MODEL_COMMAND_TIMEOUT',
        `${command} did not finish within ${timeoutMs / 1000} s and was stopped`,
      );
    return { ...ended, stdout, stderr };
  } finally {
    clearTimeout(deadline);
    clearTimeout(killTimer);
    signal?.removeEventListener('abort', onAbort);
  }
}
