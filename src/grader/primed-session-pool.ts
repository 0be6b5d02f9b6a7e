/**
 * Sandbox sessions primed with one fixed Python prelude (the symbolic checker's, Math-Verify's),
 * opened lazily, reused, and dropped after a timeout or a crash. A call whose session cannot be
 * opened or dies under it (killed, node lost) is retried once on a fresh session — on a cluster,
 * possibly another node — and a second failure is `unavailable` (an outage, not a verdict),
 * unless the checker itself still answers: when a fresh session runs a probe cell, the input
 * killed two sessions while the checker was reachable, and the call is an `error` (the input
 * breaks the checker: a verdict, graded wrong) — else a policy could learn to dodge grading.
 *
 * Grading shares the provider with the trajectories. A full provider (`SANDBOX_POOL_FULL`) is
 * a queue, not an outage, for both: a session is asked for again until one is free (a grade
 * missing for a wait would lose the trajectory's reward). And a session left idle for
 * `idleCloseMs` is closed, so sessions kept idle for good cannot hold every slot of a small
 * pool while trajectories wait for one.
 */
import type { ExecutionOutcome, SandboxProvider, SandboxSession } from '../sandbox/types.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { type Clock, systemClock } from '../shared/clock.ts';
import { everyInterval } from '../shared/clock-interval.ts';

/** Time allowed for priming a fresh session (importing SymPy, Math-Verify). */
const PRELUDE_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_SESSIONS = 4;
/** Unused this long, an idle session is closed (a busy grader keeps its sessions primed). */
const DEFAULT_IDLE_CLOSE_MS = 10_000;
/** Pause between asks to a full provider that refused at once (the local pool waits on its own). */
const POOL_FULL_RETRY_MS = 100;
/** Tries per call when the sandbox fails under it (the first, then one fresh session). */
const ATTEMPTS = 2;
const KILLED = 'session killed: ';
/** The cell that tells a reachable checker from an outage after its sessions died under a call. */
const PROBE = 'print(1)';
const PROBE_TIMEOUT_MS = 10_000;

export type PrimedCallResult =
  /** The call ran; its last line of standard output. */
  | { status: 'ok'; line: string }
  /** Over the time or memory limit: the cost of the input, not an outage. */
  | { status: 'timeout' }
  /** The code raised (the prelude's functions catch their own errors, so rarely). */
  | { status: 'error'; message: string }
  | { status: 'unavailable'; cause: string };

/**
 * A time limit shared by several calls (one grade's symbolic checks): each call may run for what
 * is left, and only the time its cell ran is taken off — not the time spent waiting for a
 * session, so a wait for a busy sandbox cannot turn a later check into a timeout.
 */
export type TimeBudget = { remainingMs: number };

export type PrimedSessionPoolOptions = {
  /** Sessions open at most (busy and idle); default 4. */
  maxSessions?: number;
  /** An idle session unused this long is closed; default 10 s. */
  idleCloseMs?: number;
  /** Measures idleness and paces the sweep; default `systemClock`. */
  clock?: Clock;
};

export class PrimedSessionPool {
  private readonly provider: SandboxProvider;
  private readonly prelude: string;
  private readonly maxSessions: number;
  private readonly idleCloseMs: number;
  private readonly clock: Clock;
  /** Idle sessions with the time each was last released; the last entry is the most recent. */
  private readonly idle: { session: SandboxSession; since: number }[] = [];
  private readonly waiting: ((session: SandboxSession | null) => void)[] = [];
  private stopSweep: (() => void) | null = null;
  private open = 0;
  private closed = false;

  constructor(provider: SandboxProvider, prelude: string, options: PrimedSessionPoolOptions = {}) {
    this.provider = provider;
    this.prelude = prelude;
    this.maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
    this.idleCloseMs = options.idleCloseMs ?? DEFAULT_IDLE_CLOSE_MS;
    this.clock = options.clock ?? systemClock;
  }

  /**
   * Runs one code cell within a time limit: milliseconds, or a budget shared with other calls
   * that the cell's run time is taken off (neither counts the wait for a session nor a fresh
   * session's prelude).
   */
  async run(code: string, limit: number | TimeBudget): Promise<PrimedCallResult> {
    const budget = typeof limit === 'number' ? { remainingMs: limit } : limit;
    let cause = '';
    // Whether every attempt's session was killed under this call (not failing to open).
    let killed = true;
    if (budget.remainingMs <= 0) return { status: 'timeout' };
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const result = await this.runOnce(code, budget);
      if (result.status !== 'unavailable') return result;
      cause = attempt === 0 ? result.cause : `${cause}; retry: ${result.cause}`;
      killed = killed && result.cause.startsWith(KILLED);
    }
    if (killed && (await this.runOnce(PROBE, { remainingMs: PROBE_TIMEOUT_MS })).status === 'ok') {
      return { status: 'error', message: `the input killed the checker's session (${cause})` };
    }
    return { status: 'unavailable', cause };
  }

  private async runOnce(code: string, budget: TimeBudget): Promise<PrimedCallResult> {
    let session: SandboxSession | null;
    try {
      session = await this.acquire();
    } catch (error) {
      return { status: 'unavailable', cause: `sandbox unavailable: ${(error as Error).message}` };
    }
    if (session === null) return { status: 'unavailable', cause: 'checker closed' };
    let outcome: ExecutionOutcome;
    const started = this.clock.now();
    try {
      outcome = await session.execute(code, { timeoutMs: Math.max(1, Math.ceil(budget.remainingMs)) });
    } catch (error) {
      await this.discard(session);
      return { status: 'unavailable', cause: `sandbox unavailable: ${(error as Error).message}` };
    }
    // The time a session failing under the call took is the sandbox's, not the input's: a
    // retry on a fresh session gets the budget the failed attempt found.
    const ranMs = this.clock.now() - started;
    if (outcome.status !== 'ok') {
      await this.discard(session);
      // A call killed for ignoring its time limit ran out of time (the input's cost, as below);
      // any other kill (crash, lost node, expired session) is the sandbox failing under it.
      if (outcome.status === 'killed' && !outcome.reason.startsWith('timeout')) {
        return { status: 'unavailable', cause: `${KILLED}${outcome.reason}` };
      }
      budget.remainingMs -= ranMs;
      if (outcome.status === 'killed') return { status: 'timeout' };
      if (outcome.status === 'error') return { status: 'error', message: outcome.exception };
      // Over the time or memory limit: the input's cost, a verdict of the grader's policy.
      return { status: 'timeout' };
    }
    budget.remainingMs -= ranMs;
    this.release(session);
    return { status: 'ok', line: outcome.stdout.trim().split('\n').pop() ?? '' };
  }

  /** Closes every session this pool opened. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopSweep?.();
    this.stopSweep = null;
    for (const waiter of this.waiting.splice(0)) waiter(null);
    await Promise.all(this.idle.splice(0).map(({ session }) => session.close().catch(() => undefined)));
  }

  private async acquire(): Promise<SandboxSession | null> {
    if (this.closed) return null;
    const idle = this.idle.pop();
    if (idle !== undefined) return idle.session;
    if (this.open >= this.maxSessions) return this.nextReleased();
    this.open++;
    let session: SandboxSession;
    try {
      session = await this.provider.openSession();
    } catch (error) {
      this.open--;
      const full = error instanceof AgentMathError && error.code === 'SANDBOX_POOL_FULL';
      if (!full || this.closed) throw error;
      // A full provider is a queue: the next of our own sessions to free up, else ask again.
      if (this.open > 0) return this.nextReleased();
      await this.clock.sleep(POOL_FULL_RETRY_MS);
      return this.acquire();
    }
    try {
      const primed = await session.execute(this.prelude, { timeoutMs: PRELUDE_TIMEOUT_MS });
      if (primed.status !== 'ok') {
        throw new Error(
          `checker prelude failed: ${primed.status === 'error' ? primed.exception : primed.status}`,
        );
      }
      return session;
    } catch (error) {
      this.open--;
      await session.close().catch(() => undefined);
      throw error;
    }
  }

  /** Resolves with the next session a call releases (null when the pool closes first). */
  private nextReleased(): Promise<SandboxSession | null> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(session: SandboxSession): void {
    const waiter = this.waiting.shift();
    if (waiter !== undefined) waiter(session);
    else if (this.closed) void this.discard(session);
    else {
      this.idle.push({ session, since: this.clock.now() });
      // Swept only while sessions are idle: an unused pool runs no timer.
      this.stopSweep ??= everyInterval(this.clock, Math.max(1, this.idleCloseMs / 2), () => this.closeIdle());
    }
  }

  /** Closes the sessions idle for `idleCloseMs` or longer. */
  private closeIdle(): void {
    const now = this.clock.now();
    for (const entry of this.idle.filter(({ since }) => now - since >= this.idleCloseMs)) {
      this.idle.splice(this.idle.indexOf(entry), 1);
      void this.discard(entry.session);
    }
    if (this.idle.length === 0) {
      this.stopSweep?.();
      this.stopSweep = null;
    }
  }

  private async discard(session: SandboxSession): Promise<void> {
    this.open--;
    await session.close().catch(() => undefined);
    // A waiter gets a fresh session on its own next call; wake one so it can open one.
    const waiter = this.waiting.shift();
    if (waiter !== undefined) this.acquire().then(waiter, () => waiter(null));
  }
}
