/**
 * The in-process sandbox provider: a pool of pre-started jailed workers, one per session.
 * Opening a session takes a warm worker (milliseconds) and the pool starts another in the
 * background. A worker serves exactly one session and is destroyed with it, so no state,
 * monkey-patched module or file of one trajectory can reach another; after a kill, a
 * memory-exceeded call or an idle expiry the session's next call gets a fresh worker.
 * When every slot holds a session, `openSession` waits up to `acquireTimeoutMs` and then
 * throws `SandboxPoolFullError` (code SANDBOX_POOL_FULL).
 */
import { randomUUID } from 'node:crypto';
import { type Clock, systemClock } from '../shared/clock.ts';
import { everyInterval } from '../shared/clock-interval.ts';
import { type CgroupSupport, detectCgroupSupport } from './cgroup-limits.ts';
import { JailedWorker } from './jailed-worker.ts';
import {
  type LocalSandboxOptions,
  localSandboxOptionsSchema,
  type ResolvedLocalSandboxOptions,
} from './local-sandbox-options.ts';
import { SandboxPoolFullError, SandboxSessionClosedError, SandboxStartError } from './sandbox-errors.ts';
import type { ExecuteOptions, ExecutionOutcome, SandboxProvider, SandboxSession } from './types.ts';
import { WorkerLauncher } from './worker-launcher.ts';

/** Counts a server or a benchmark reads. */
export type LocalSandboxStats = {
  sessions: number;
  maxSessions: number;
  idleWorkers: number;
  startingWorkers: number;
  boundWorkers: number;
  workersStarted: number;
  workerStartFailures: number;
};

type WorkerWaiter = {
  resolve: (worker: JailedWorker) => void;
  reject: (error: Error) => void;
  /** Starts begun before this waiter queued; their failures (say, the launcher died) are not its. */
  startsBefore: number;
  /** Failed starts charged to this waiter; the first is retried, the second rejects it. */
  failures: number;
};

/**
 * What the pool runs in: its log, and the clock of its idle sweep (default `systemClock`;
 * `now` alone, in milliseconds, is still accepted and measures idleness on the sweep's clock).
 */
export type LocalSandboxEnvironment = { log?: (line: string) => void; clock?: Clock; now?: () => number };

/** The pool. Create it with `createLocalSandbox(options)`. */
export class LocalSandboxPool implements SandboxProvider {
  readonly options: ResolvedLocalSandboxOptions;
  readonly #log: (line: string) => void;
  readonly #now: () => number;
  readonly #cgroups: CgroupSupport | null;
  readonly #launcher: WorkerLauncher;
  readonly #idle: JailedWorker[] = [];
  readonly #workerWaiters: WorkerWaiter[] = [];
  readonly #slotWaiters: Array<() => void> = [];
  readonly #sessions = new Map<string, LocalSandboxSession>();
  readonly #retiring = new Set<Promise<void>>();
  readonly #stopSweeper: () => void;
  #starting = 0;
  #startsBegun = 0;
  #bound = 0;
  #slotsUsed = 0;
  #closed = false;
  #workersStarted = 0;
  #workerStartFailures = 0;

  constructor(options: LocalSandboxOptions = {}, environment: LocalSandboxEnvironment = {}) {
    this.options = localSandboxOptionsSchema.parse(options);
    this.#log = environment.log ?? ((line) => process.stderr.write(`${line}\n`));
    const clock = environment.clock ?? systemClock;
    this.#now = environment.now ?? (() => clock.now());
    this.#cgroups = this.options.cgroups === 'auto' ? detectCgroupSupport(this.#log) : null;
    this.#launcher = new WorkerLauncher({ pythonPath: this.options.pythonPath, log: this.#log });
    const sweepMs = Math.max(50, Math.min(5_000, Math.floor(this.options.idleTtlMs / 4)));
    this.#stopSweeper = everyInterval(clock, sweepMs, () => this.#expireIdle());
    this.#refill();
  }

  /** True when workers run with cgroup memory/pids limits. */
  get cgroupsEnabled(): boolean {
    return this.#cgroups !== null;
  }

  /** Resolves once the warm set is full (or a start failed, which it rethrows). */
  async ready(): Promise<void> {
    const target = () => Math.min(this.options.warmWorkers, this.options.maxWorkers - this.#bound);
    while (this.#idle.length < target()) {
      if (this.#closed) throw new SandboxStartError('sandbox pool is closed');
      const failuresBefore = this.#workerStartFailures;
      await new Promise((resolve) => setTimeout(resolve, 10));
      if (this.#workerStartFailures > failuresBefore && this.#idle.length === 0 && this.#starting === 0) {
        throw new SandboxStartError('sandbox workers fail to start; see the log above');
      }
      this.#refill();
    }
  }

  /** Opens a session on a warm worker; waits for a slot up to `acquireTimeoutMs`. */
  async openSession(): Promise<LocalSandboxSession> {
    if (this.#closed) throw new SandboxStartError('sandbox pool is closed');
    await this.acquireSlot();
    const session = new LocalSandboxSession(randomUUID(), this, this.#now);
    this.#sessions.set(session.id, session);
    try {
      session.attach(await this.takeWorker());
    } catch (error) {
      this.#sessions.delete(session.id);
      this.releaseSlot();
      throw error;
    }
    return session;
  }

  /** Counts of sessions and workers. */
  stats(): LocalSandboxStats {
    return {
      sessions: this.#sessions.size,
      maxSessions: this.options.maxWorkers,
      idleWorkers: this.#idle.length,
      startingWorkers: this.#starting,
      boundWorkers: this.#bound,
      workersStarted: this.#workersStarted,
      workerStartFailures: this.#workerStartFailures,
    };
  }

  /** Memory of each idle warm worker (bytes). */
  idleWorkerMemory(): number[] {
    return this.#idle.map((worker) => worker.memoryBytes());
  }

  /** Memory of every live worker (idle or bound), summed: bytes. */
  totalWorkerMemory(): number {
    const sessionWorkers = [...this.#sessions.values()].map((session) => session.workerMemory());
    return [...this.idleWorkerMemory(), ...sessionWorkers].reduce((sum, value) => sum + value, 0);
  }

  /** Uids of every live worker (idle or bound); tests use them to find leftover processes. */
  workerUids(): number[] {
    return [
      ...this.#idle.map((worker) => worker.uid),
      ...[...this.#sessions.values()].flatMap((s) => s.workerUid() ?? []),
    ];
  }

  /** Closes every session and worker; waits until every jail is gone. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopSweeper();
    for (const waiter of this.#workerWaiters.splice(0))
      waiter.reject(new SandboxStartError('sandbox pool is closed'));
    await Promise.all([...this.#sessions.values()].map((session) => session.close()));
    await Promise.all(this.#idle.splice(0).map((worker) => worker.kill()));
    while (this.#starting > 0 || this.#retiring.size > 0) {
      await Promise.all([...this.#retiring]);
      if (this.#starting > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await this.#launcher.close();
  }

  /** @internal Reserves a session slot, waiting up to `acquireTimeoutMs`. */
  async acquireSlot(): Promise<void> {
    if (this.#slotsUsed < this.options.maxWorkers) {
      this.#slotsUsed += 1;
      return;
    }
    const waitMs = this.options.acquireTimeoutMs;
    await new Promise<void>((resolve, reject) => {
      const grant = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const index = this.#slotWaiters.indexOf(grant);
        if (index >= 0) this.#slotWaiters.splice(index, 1);
        reject(
          new SandboxPoolFullError(
            `${this.options.maxWorkers} sessions open and none closed within ${waitMs} ms; close idle sessions or raise maxWorkers`,
          ),
        );
      }, waitMs);
      this.#slotWaiters.push(grant);
    });
  }

  /** @internal Frees a slot, handing it straight to the oldest waiter when there is one. */
  releaseSlot(): void {
    const next = this.#slotWaiters.shift();
    if (next) next();
    else this.#slotsUsed -= 1;
  }

  /** @internal A ready worker for a session: an idle one, or the next to finish starting. */
  async takeWorker(): Promise<JailedWorker> {
    if (this.#closed) throw new SandboxStartError('sandbox pool is closed');
    let worker = this.#idle.shift();
    while (worker && !worker.alive) worker = this.#idle.shift();
    if (!worker) {
      worker = await new Promise<JailedWorker>((resolve, reject) => {
        this.#workerWaiters.push({ resolve, reject, startsBefore: this.#startsBegun, failures: 0 });
        if (this.#starting < this.#workerWaiters.length) this.#startWorker();
      });
    }
    this.#bound += 1;
    this.#refill();
    return worker;
  }

  /** @internal Kills a session's worker; the pool refills its warm set. */
  retireWorker(worker: JailedWorker): Promise<void> {
    this.#bound -= 1;
    const done = worker.kill().finally(() => {
      this.#retiring.delete(done);
      this.#refill();
    });
    this.#retiring.add(done);
    return done;
  }

  /** @internal Forgets a closed or expired session. */
  forgetSession(session: LocalSandboxSession): void {
    if (this.#sessions.delete(session.id)) this.releaseSlot();
  }

  /** @internal Re-registers an expired session that is used again. */
  async reviveSession(session: LocalSandboxSession): Promise<void> {
    await this.acquireSlot();
    this.#sessions.set(session.id, session);
  }

  #refill(): void {
    if (this.#closed) return;
    const { warmWorkers, maxWorkers, maxConcurrentStarts } = this.options;
    while (
      this.#idle.length + this.#starting < warmWorkers + this.#workerWaiters.length &&
      this.#idle.length + this.#starting + this.#bound < maxWorkers &&
      this.#starting < maxConcurrentStarts
    ) {
      this.#startWorker();
    }
  }

  #startWorker(): void {
    this.#starting += 1;
    this.#startsBegun += 1;
    const startNumber = this.#startsBegun;
    const { options } = this;
    JailedWorker.start({
      launcher: this.#launcher,
      pythonPath: options.pythonPath,
      runnerDir: options.runnerDir,
      preload: options.preload,
      outputLimitBytes: options.outputLimitBytes,
      limits: {
        memoryBytes: options.memoryLimitBytes,
        processes: options.processes,
        fileSizeBytes: options.fileSizeBytes,
        cpuSeconds: options.cpuSeconds,
        openFiles: options.openFiles,
        tmpBytes: options.tmpBytes,
      },
      cgroups: this.#cgroups,
      startupTimeoutMs: options.startupTimeoutMs,
      log: this.#log,
    }).then(
      (worker) => {
        this.#starting -= 1;
        this.#workersStarted += 1;
        if (this.#closed) {
          void worker.kill();
          return;
        }
        const waiter = this.#workerWaiters.shift();
        if (waiter) waiter.resolve(worker);
        else this.#idle.push(worker);
        // A warm worker that dies while idle (its launcher ended, say) is replaced at once.
        void worker.exited.then(() => {
          const index = this.#idle.indexOf(worker);
          if (index >= 0) this.#idle.splice(index, 1);
          this.#refill();
        });
        this.#refill();
      },
      (error: Error) => {
        this.#starting -= 1;
        this.#workerStartFailures += 1;
        this.#log(`sandbox: a worker failed to start: ${error.message}`);
        const waiter = this.#workerWaiters.shift();
        if (waiter && !this.#closed) {
          if (startNumber > waiter.startsBefore) waiter.failures += 1;
          if (waiter.failures < 2) {
            this.#workerWaiters.unshift(waiter);
            this.#startWorker();
            return;
          }
        }
        waiter?.reject(error);
        // Retry the warm set later, not in a tight loop, when starts keep failing.
        setTimeout(() => this.#refill(), 1_000).unref();
      },
    );
  }

  #expireIdle(): void {
    const now = this.#now();
    for (const session of this.#sessions.values()) {
      if (session.idleSince(now) > this.options.idleTtlMs) session.expire();
    }
  }
}

/** One session of the local pool. After `killed` or `memory-exceeded`, the next call starts fresh. */
export class LocalSandboxSession implements SandboxSession {
  readonly id: string;
  readonly #pool: LocalSandboxPool;
  readonly #now: () => number;
  #worker: JailedWorker | null = null;
  #chain: Promise<unknown> = Promise.resolve();
  #state: 'open' | 'expired' | 'closed' = 'open';
  #busy = false;
  #lastUsedAt: number;

  constructor(id: string, pool: LocalSandboxPool, now: () => number) {
    this.id = id;
    this.#pool = pool;
    this.#now = now;
    this.#lastUsedAt = now();
  }

  /** @internal */
  attach(worker: JailedWorker): void {
    this.#worker = worker;
  }

  /** @internal */
  workerMemory(): number {
    return this.#worker?.memoryBytes() ?? 0;
  }

  /** @internal */
  workerUid(): number | null {
    return this.#worker?.uid ?? null;
  }

  /** True once the pool's idle sweep closed this session (its next call reports `killed`). */
  get expired(): boolean {
    return this.#state === 'expired';
  }

  /** @internal Milliseconds since the last call ended (0 while a call runs). */
  idleSince(now: number): number {
    return this.#busy ? 0 : now - this.#lastUsedAt;
  }

  /** Runs one cell; calls on one session run one after another. */
  execute(code: string, options: ExecuteOptions = {}): Promise<ExecutionOutcome> {
    const run = this.#chain.then(() => this.#run(code, options));
    this.#chain = run.catch(() => {});
    return run;
  }

  async #run(code: string, options: ExecuteOptions): Promise<ExecutionOutcome> {
    if (this.#state === 'closed') throw new SandboxSessionClosedError(this.id);
    if (this.#state === 'expired') {
      await this.#pool.reviveSession(this);
      this.#state = 'open';
      this.#lastUsedAt = this.#now();
      const ttl = this.#pool.options.idleTtlMs;
      return {
        status: 'killed',
        reason: `session-expired: unused for more than ${ttl} ms; its state was reset`,
      };
    }
    this.#busy = true;
    try {
      if (!this.#worker) this.#worker = await this.#pool.takeWorker();
      const { defaultTimeoutMs, maxTimeoutMs, graceMs } = this.#pool.options;
      const timeoutMs = Math.min(
        Math.max(1, Math.round(options.timeoutMs ?? defaultTimeoutMs)),
        maxTimeoutMs,
      );
      const worker = this.#worker;
      const outcome = await worker.execute(code, timeoutMs, graceMs);
      if (this.#worker !== worker) return { status: 'killed', reason: 'session-closed while the code ran' };
      if (outcome.status === 'killed' || outcome.status === 'memory-exceeded' || !worker.alive) {
        this.#worker = null;
        await this.#pool.retireWorker(worker);
      }
      return outcome;
    } finally {
      this.#busy = false;
      this.#lastUsedAt = this.#now();
    }
  }

  /** @internal Called by the pool's idle sweep. */
  expire(): void {
    if (this.#state !== 'open' || this.#busy) return;
    this.#state = 'expired';
    this.#releaseWorker();
    this.#pool.forgetSession(this);
  }

  /** Ends the session and kills its worker (a running call reports `killed`). */
  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    const wasExpired = this.#state === 'expired';
    this.#state = 'closed';
    await this.#releaseWorker();
    if (!wasExpired) this.#pool.forgetSession(this);
  }

  #releaseWorker(): Promise<void> {
    const worker = this.#worker;
    this.#worker = null;
    return worker ? this.#pool.retireWorker(worker) : Promise.resolve();
  }
}

/** Creates the in-process pool of jailed workers and starts warming it. */
export function createLocalSandbox(
  options: LocalSandboxOptions = {},
  environment: LocalSandboxEnvironment = {},
): LocalSandboxPool {
  return new LocalSandboxPool(options, environment);
}
