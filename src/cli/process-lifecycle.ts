/**
 * How the `agentmath` process ends, whatever ends it: a signal (TERM, INT, HUP), a closed
 * standard output (`| head`), or the command finishing. Commands register what they started
 * (the PyTorch worker, a sandbox pool and its jails, an HTTP server) with `onShutdown`, and
 * every path runs those cleanups before the process goes.
 *
 * - A signal: `interruptSignal()` is aborted. A command that has a graceful path (`eval`
 *   writes its summary and the resume hint) calls `holdSignals()` and sees the abort; when it
 *   returns, `main.ts` re-raises the signal. Otherwise the cleanups run at once (10 s at most)
 *   and the signal is re-raised, so the exit status is 128+N as for any Unix process. A
 *   second, different-moment signal skips the grace: cleanups, then the signal.
 * - The launcher (`bin/agentmath.js`) forwards signals to this process; a terminal's Ctrl-C
 *   reaches both, so the same signal again within `DUPLICATE_WINDOW_MS` counts once.
 * - A closed standard output or error (EPIPE): the command stops quietly, cleanups run, exit 0.
 * - The launcher's death: a launcher that re-ran this process under the bundled Node holds the
 *   other end of a pipe on fd `AGENTMATH_PARENT_FD`; when it closes (the launcher was killed,
 *   even by SIGKILL) this process stops as on SIGTERM, so no job runs on without its parent.
 */
import { Socket } from 'node:net';

type Cleanup = () => Promise<void> | void;

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
/** A repeat of the same signal this soon after it is the launcher's forwarded copy. */
const DUPLICATE_WINDOW_MS = 500;
/** Cleanups get this long before the process goes anyway. */
const CLEANUP_LIMIT_MS = 10_000;

const cleanups = new Set<Cleanup>();
const interrupt = new AbortController();
let installed = false;
let holders = 0;
let received: { signal: NodeJS.Signals; at: number } | null = null;
let ending = false;

/** Registers a cleanup run when the process is stopped early; returns its unregistration. */
export function onShutdown(cleanup: Cleanup): () => void {
  cleanups.add(cleanup);
  return () => {
    cleanups.delete(cleanup);
  };
}

/** Aborted (reason: the signal's name) when TERM, INT or HUP arrives. */
export function interruptSignal(): AbortSignal {
  return interrupt.signal;
}

/** The command stops on `interruptSignal()` itself; call the result when it no longer does. */
export function holdSignals(): () => void {
  holders++;
  let released = false;
  return () => {
    if (!released) holders--;
    released = true;
  };
}

/** The signal that asked the process to stop, if any. */
export function receivedSignal(): NodeJS.Signals | null {
  return received?.signal ?? null;
}

async function runCleanups(): Promise<void> {
  const pending = [...cleanups].reverse();
  cleanups.clear();
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, CLEANUP_LIMIT_MS);
    timer.unref();
  });
  const all = (async () => {
    for (const cleanup of pending) {
      try {
        await cleanup();
      } catch {
        // a cleanup that fails must not keep the others from running
      }
    }
  })();
  await Promise.race([all, limit]);
  clearTimeout(timer);
}

/** Ends the process by `signal`'s default action, so the parent sees death by that signal. */
export function reraise(signal: NodeJS.Signals): never {
  for (const name of SIGNALS) process.removeAllListeners(name);
  process.kill(process.pid, signal);
  // The default action is asynchronous on some platforms; keep the status right meanwhile.
  process.exit(128 + (signalNumber(signal) ?? 0));
}

function signalNumber(signal: NodeJS.Signals): number | undefined {
  return { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 }[signal as 'SIGHUP' | 'SIGINT' | 'SIGTERM'];
}

async function endNow(then: () => never): Promise<void> {
  if (ending) return;
  ending = true;
  await runCleanups();
  then();
}

function onSignal(signal: NodeJS.Signals): void {
  const now = Date.now();
  if (received !== null) {
    if (received.signal === signal && now - received.at < DUPLICATE_WINDOW_MS) return;
    void endNow(() => reraise(signal));
    return;
  }
  received = { signal, at: now };
  interrupt.abort(signal);
  if (holders === 0) void endNow(() => reraise(signal));
}

function onStreamError(error: NodeJS.ErrnoException): void {
  if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') {
    if (ending) return;
    // The reader is gone: what the command would still print (a retry note after its engine
    // was stopped here) is noise. Stop the work, then the children, then the process.
    const discard = (() => true) as typeof process.stdout.write;
    process.stdout.write = discard;
    process.stderr.write = discard;
    interrupt.abort('EPIPE');
    void endNow(() => process.exit(0));
    return;
  }
  throw error;
}

/** Stops this process as on SIGTERM when the launcher's end of the lifeline pipe closes. */
function watchLauncher(): void {
  const fd = Number(process.env.AGENTMATH_PARENT_FD);
  // Not passed on: a process this one starts does not hold the lifeline.
  delete process.env.AGENTMATH_PARENT_FD;
  if (!Number.isInteger(fd) || fd < 3) return;
  let lifeline: Socket;
  try {
    lifeline = new Socket({ fd, readable: true, writable: false });
  } catch {
    return; // no such descriptor: not started by the launcher
  }
  const launcherGone = () => {
    if (received === null) onSignal('SIGTERM');
  };
  lifeline.on('data', () => {});
  lifeline.once('end', launcherGone);
  lifeline.once('error', launcherGone);
  lifeline.unref();
}

/** Installs the signal, closed-pipe and launcher-death handling; called once by `main.ts`. */
export function installProcessLifecycle(): void {
  if (installed) return;
  installed = true;
  for (const signal of SIGNALS) process.on(signal, onSignal);
  process.stdout.on('error', onStreamError);
  process.stderr.on('error', onStreamError);
  watchLauncher();
}

/** After the command returned: re-raise the signal that stopped it, if one did. */
export async function finishProcess(): Promise<void> {
  await runCleanups();
  if (received !== null) reraise(received.signal);
}
