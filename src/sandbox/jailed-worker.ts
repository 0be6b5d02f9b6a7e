/**
 * One jailed Python runner process: starts it (warm, modules preloaded), runs one cell at a
 * time over the framed control socket, enforces the hard deadline from outside (SIGKILL of
 * the whole jail when the code resists the in-runner timer), and turns every way the process
 * can end into an `ExecutionOutcome`. A worker never outlives or serves more than one session.
 * The process is started and killed by the pool's launcher helper (worker-launcher.ts), so
 * nothing here forks or waits on the event loop; cgroup files are written asynchronously.
 */
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { CgroupSupport, WorkerCgroup } from './cgroup-limits.ts';
import { encodeFrame, FrameDecoder } from './frame-codec.ts';
import { allocateWorkerUid, buildJailCommand } from './jail-command.ts';
import { SandboxStartError } from './sandbox-errors.ts';
import type { ExecutionOutcome } from './types.ts';
import type { LaunchedProcess, LaunchedProcessEnd, WorkerLauncher } from './worker-launcher.ts';

/** rlimits applied by the runner to itself before any user code, plus the cgroup/tmpfs sizes. */
export type WorkerLimits = {
  memoryBytes: number;
  processes: number;
  fileSizeBytes: number;
  cpuSeconds: number;
  openFiles: number;
  tmpBytes: number;
};

export type JailedWorkerOptions = {
  launcher: WorkerLauncher;
  pythonPath: string;
  runnerDir: string;
  preload: readonly string[];
  outputLimitBytes: number;
  limits: WorkerLimits;
  cgroups: CgroupSupport | null;
  startupTimeoutMs: number;
  log: (line: string) => void;
};

type Pending = {
  id: number;
  resolve: (outcome: ExecutionOutcome) => void;
  limitMs: number;
  timer: NodeJS.Timeout;
};

const RUNNER_STATUSES = new Set(['ok', 'error', 'timeout', 'memory-exceeded']);

/** A running jail with one Python runner inside. */
export class JailedWorker {
  readonly uid: number;
  /** Host pid of the jail's outermost process (-1 until the launcher reports it). */
  pid = -1;
  readonly #process: LaunchedProcess;
  readonly #decoder: FrameDecoder;
  readonly #cgroup: WorkerCgroup | null;
  readonly #limits: WorkerLimits;
  readonly #exited: Promise<void>;
  #control: Socket | null = null;
  #nextId = 1;
  #pending: Pending | null = null;
  #killReason: string | null = null;
  #alive = true;
  #killRequested = false;
  #onReady: ((error: Error | null) => void) | null = null;
  calls = 0;

  private constructor(options: JailedWorkerOptions, cgroup: WorkerCgroup | null) {
    this.uid = allocateWorkerUid();
    this.#limits = options.limits;
    this.#cgroup = cgroup;
    this.#decoder = new FrameDecoder(16 * options.outputLimitBytes + 1024 * 1024);
    const { command, args } = buildJailCommand({
      pythonPath: options.pythonPath,
      runnerDir: options.runnerDir,
      uid: this.uid,
      tmpBytes: options.limits.tmpBytes,
      cgroupProcsFiles: cgroup?.procsFiles ?? [],
      runnerConfig: {
        preload: options.preload,
        outputLimitBytes: options.outputLimitBytes,
        reapBackgroundProcesses: true,
        limits: {
          addressSpaceBytes: options.limits.memoryBytes,
          processes: options.limits.processes,
          fileSizeBytes: options.limits.fileSizeBytes,
          cpuSeconds: options.limits.cpuSeconds,
          openFiles: options.limits.openFiles,
        },
      },
    });
    let onExit: (end: LaunchedProcessEnd) => void = () => {};
    this.#exited = new Promise((resolve) => {
      onExit = (end) => void this.#onExit(end).then(resolve);
    });
    this.#process = options.launcher.launch(
      [command, ...args],
      { PATH: '/usr/bin:/bin' },
      {
        onSpawn: (pid) => {
          this.pid = pid;
        },
        onConnection: (socket, firstBytes) => this.#onConnection(socket, firstBytes),
        onExit,
      },
    );
  }

  /** Starts a worker and resolves once its runner has preloaded its modules. */
  static async start(options: JailedWorkerOptions): Promise<JailedWorker> {
    const cgroup = options.cgroups
      ? await options.cgroups.create({
          memoryBytes: options.limits.memoryBytes,
          pids: options.limits.processes + 8,
        })
      : null;
    const worker = new JailedWorker(options, cgroup);
    if (!worker.#alive) {
      await worker.#exited;
      throw new SandboxStartError('sandbox worker could not be launched: the launcher is closed');
    }
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          worker.#onReady?.(
            new SandboxStartError(`sandbox worker not ready after ${options.startupTimeoutMs} ms`),
          ),
        options.startupTimeoutMs,
      );
      worker.#onReady = (error) => {
        clearTimeout(timer);
        worker.#onReady = null;
        if (error) reject(error);
        else resolve();
      };
    });
    try {
      await ready;
    } catch (error) {
      await worker.kill();
      throw error;
    }
    return worker;
  }

  /** Settles once the jail is gone, however it ended. */
  get exited(): Promise<void> {
    return this.#exited;
  }

  get alive(): boolean {
    return this.#alive;
  }

  get busy(): boolean {
    return this.#pending !== null;
  }

  /** Runs one cell. The runner interrupts at `timeoutMs`; past `timeoutMs + graceMs` the jail is killed. */
  execute(code: string, timeoutMs: number, graceMs: number): Promise<ExecutionOutcome> {
    if (!this.#alive) return Promise.resolve({ status: 'killed', reason: 'the sandbox worker is gone' });
    if (this.#pending) throw new Error('JailedWorker.execute called while a call is running');
    this.calls += 1;
    const id = this.#nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#killReason = `timeout: the code ignored the ${timeoutMs} ms interrupt for ${graceMs} ms more and was killed; the session's state was reset`;
        void this.kill();
      }, timeoutMs + graceMs);
      this.#pending = { id, resolve, limitMs: timeoutMs, timer };
      this.#control?.write(encodeFrame({ id, op: 'execute', code, timeoutMs }));
    });
  }

  /** Kills the whole jail (every process in its pid namespace) and waits until it is gone. */
  async kill(): Promise<void> {
    if (this.#alive && !this.#killRequested) {
      // The launcher kills the namespace's init (bwrap's child) first: the kernel then kills
      // every process in the jail and bwrap reaps it, so nothing is left as a zombie.
      this.#killRequested = true;
      this.#process.kill();
    }
    await this.#exited;
  }

  /** Resident memory of the jail: the cgroup's charge when known, else the process tree's RSS. */
  memoryBytes(): number {
    return this.#cgroup?.memoryBytes() ?? treeRssBytes(this.pid);
  }

  /** Sum of VmRSS over the jail's process tree. */
  rssBytes(): number {
    return treeRssBytes(this.pid);
  }

  #onMessage(message: Record<string, unknown>): void {
    if (message.op === 'ready' && this.#onReady) {
      this.#onReady(null);
      return;
    }
    const pending = this.#pending;
    if (!pending || message.id !== pending.id || typeof message.status !== 'string') {
      this.#violation('unexpected message from the runner');
      return;
    }
    const { status } = message;
    const stdout = typeof message.stdout === 'string' ? message.stdout : '';
    const stderr = typeof message.stderr === 'string' ? message.stderr : '';
    const ms = typeof message.ms === 'number' ? message.ms : 0;
    if (!RUNNER_STATUSES.has(status)) {
      this.#violation(`unknown status ${JSON.stringify(status).slice(0, 40)}`);
      return;
    }
    if (status === 'ok') this.#settle({ status, stdout, stderr, ms });
    else if (status === 'error') {
      const exception = typeof message.exception === 'string' ? message.exception : '';
      const exitCode = message.exit_code;
      const exited = Number.isInteger(exitCode) && (exitCode as number) >= 1 && (exitCode as number) <= 255;
      this.#settle({
        status,
        stdout,
        stderr,
        exception,
        ms,
        ...(exited ? { exitCode: exitCode as number } : {}),
      });
    } else if (status === 'timeout') this.#settle({ status, stdout, limitMs: pending.limitMs });
    else this.#settle({ status: 'memory-exceeded', limitBytes: this.#limits.memoryBytes });
  }

  #violation(detail: string): void {
    this.#killReason = `protocol-violation: ${detail}; the session's state was reset`;
    void this.kill();
  }

  #onConnection(socket: Socket, firstBytes: Buffer): void {
    this.#control = socket;
    const receive = (chunk: Buffer) => {
      let messages: Record<string, unknown>[];
      try {
        messages = this.#decoder.push(chunk);
      } catch (error) {
        this.#violation(error instanceof Error ? error.message : String(error));
        return;
      }
      for (const message of messages) this.#onMessage(message);
    };
    socket.on('data', receive);
    if (!this.#alive) socket.destroy();
    else if (firstBytes.length > 0) receive(firstBytes);
  }

  async #onExit(end: LaunchedProcessEnd): Promise<void> {
    this.#alive = false;
    this.#control?.destroy();
    const how = end.error ?? (end.signal ? `signal ${end.signal}` : `exit code ${end.code}`);
    this.#onReady?.(
      new SandboxStartError(`sandbox worker ended during startup (${how}): ${end.stderr.trim()}`),
    );
    const oomKilled = (await this.#cgroup?.oomKilled()) ?? false;
    this.#settle(
      oomKilled
        ? { status: 'memory-exceeded', limitBytes: this.#limits.memoryBytes }
        : {
            status: 'killed',
            reason: this.#killReason ?? `the Python process ended (${how}); the session's state was reset`,
          },
    );
    await this.#cgroup?.remove();
  }

  #settle(outcome: ExecutionOutcome): void {
    const pending = this.#pending;
    if (!pending) return;
    this.#pending = null;
    clearTimeout(pending.timer);
    pending.resolve(outcome);
  }
}

function childPids(pid: number): number[] {
  try {
    const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    return text ? text.split(/\s+/).map(Number) : [];
  } catch {
    return [];
  }
}

function treeRssBytes(rootPid: number): number {
  let total = 0;
  const stack = [rootPid];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const match = /VmRSS:\s+(\d+) kB/.exec(status);
      if (match) total += Number(match[1]) * 1024;
      stack.push(...childPids(pid));
    } catch {
      // the process ended meanwhile
    }
  }
  return total;
}
