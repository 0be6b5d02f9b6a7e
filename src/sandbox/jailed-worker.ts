/**
 * One jailed Python runner process: starts it (warm, modules preloaded), runs one cell at a
 * time over the framed control socket, enforces the hard deadline from outside (SIGKILL of
 * the whole jail when the code resists the in-runner timer), and turns every way the process
 * can end into an `ExecutionOutcome`. A worker never outlives or serves more than one session.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { CgroupSupport, WorkerCgroup } from './cgroup-limits.ts';
import { encodeFrame, FrameDecoder } from './frame-codec.ts';
import { allocateWorkerUid, buildJailCommand } from './jail-command.ts';
import { SandboxStartError } from './sandbox-errors.ts';
import type { ExecutionOutcome } from './types.ts';

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
  readonly pid: number;
  readonly #child: ChildProcess;
  readonly #control: Socket;
  readonly #cgroup: WorkerCgroup | null;
  readonly #limits: WorkerLimits;
  readonly #exited: Promise<void>;
  #nextId = 1;
  #pending: Pending | null = null;
  #killReason: string | null = null;
  #alive = true;
  #onReady: ((error: Error | null) => void) | null = null;
  #stderrTail = '';
  calls = 0;

  private constructor(options: JailedWorkerOptions) {
    this.uid = allocateWorkerUid();
    this.#limits = options.limits;
    this.#cgroup =
      options.cgroups?.create({
        memoryBytes: options.limits.memoryBytes,
        pids: options.limits.processes + 8,
      }) ?? null;
    const { command, args } = buildJailCommand({
      pythonPath: options.pythonPath,
      runnerDir: options.runnerDir,
      uid: this.uid,
      tmpBytes: options.limits.tmpBytes,
      cgroupProcsFiles: this.#cgroup?.procsFiles ?? [],
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
    this.#child = spawn(command, args, {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/bin:/bin' },
    });
    this.pid = this.#child.pid ?? -1;
    this.#control = this.#child.stdio[3] as Socket;
    const decoder = new FrameDecoder(16 * options.outputLimitBytes + 1024 * 1024);
    this.#control.on('data', (chunk: Buffer) => {
      let messages: Record<string, unknown>[];
      try {
        messages = decoder.push(chunk);
      } catch (error) {
        this.#violation(error instanceof Error ? error.message : String(error));
        return;
      }
      for (const message of messages) this.#onMessage(message);
    });
    this.#control.on('error', () => {});
    this.#child.stderr?.on('data', (chunk: Buffer) => {
      if (this.#stderrTail.length < 4096) this.#stderrTail += chunk.toString('utf8').slice(0, 4096);
    });
    this.#exited = new Promise((resolve) => {
      this.#child.on('exit', (code, signal) => {
        this.#alive = false;
        this.#control.destroy();
        const how = signal ? `signal ${signal}` : `exit code ${code}`;
        this.#onReady?.(
          new SandboxStartError(`sandbox worker ended during startup (${how}): ${this.#stderrTail.trim()}`),
        );
        this.#settle(this.#outcomeOnExit(how));
        void (this.#cgroup?.remove() ?? Promise.resolve()).then(resolve);
      });
      this.#child.on('error', (error) => {
        this.#onReady?.(
          new SandboxStartError(`cannot start the sandbox jail: ${error.message}`, { cause: error }),
        );
      });
    });
  }

  /** Starts a worker and resolves once its runner has preloaded its modules. */
  static async start(options: JailedWorkerOptions): Promise<JailedWorker> {
    const worker = new JailedWorker(options);
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
      this.#control.write(encodeFrame({ id, op: 'execute', code, timeoutMs }));
    });
  }

  /** Kills the whole jail (every process in its pid namespace) and waits until it is gone. */
  async kill(): Promise<void> {
    if (this.#alive) {
      // Kill the namespace's init (bwrap's child) first: the kernel then kills every process in
      // the jail and bwrap reaps it, so nothing is left as a zombie of the host's init.
      const inits = childPids(this.pid);
      for (const pid of inits) signalQuietly(pid);
      if (inits.length === 0) signalQuietly(this.pid);
      const fallback = setTimeout(() => signalQuietly(this.pid), 2_000);
      await this.#exited;
      clearTimeout(fallback);
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
      this.#settle({ status, stdout, stderr, exception, ms });
    } else if (status === 'timeout') this.#settle({ status, stdout, limitMs: pending.limitMs });
    else this.#settle({ status: 'memory-exceeded', limitBytes: this.#limits.memoryBytes });
  }

  #violation(detail: string): void {
    this.#killReason = `protocol-violation: ${detail}; the session's state was reset`;
    void this.kill();
  }

  #outcomeOnExit(how: string): ExecutionOutcome {
    if (this.#cgroup?.oomKilled()) return { status: 'memory-exceeded', limitBytes: this.#limits.memoryBytes };
    return {
      status: 'killed',
      reason: this.#killReason ?? `the Python process ended (${how}); the session's state was reset`,
    };
  }

  #settle(outcome: ExecutionOutcome): void {
    const pending = this.#pending;
    if (!pending) return;
    this.#pending = null;
    clearTimeout(pending.timer);
    pending.resolve(outcome);
  }
}

function signalQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
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
