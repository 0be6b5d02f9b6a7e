/**
 * Sandbox sessions primed with one fixed Python prelude (the symbolic checker's, Math-Verify's),
 * opened lazily, reused, and dropped after a timeout or a crash. A call whose session cannot be
 * opened or dies under it (killed, node lost) is retried once on a fresh session — on a cluster,
 * possibly another node — and a second failure is `unavailable` (an outage, not a verdict),
 * unless the checker itself still answers: when a fresh session runs a probe cell, the input
 * killed two sessions while the checker was reachable, and the call is an `error` (the input
 * breaks the checker: a verdict, graded wrong) — else a policy could learn to dodge grading.
 */
import type { ExecutionOutcome, SandboxProvider, SandboxSession } from '../sandbox/types.ts';

/** Time allowed for priming a fresh session (importing SymPy, Math-Verify). */
const PRELUDE_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_SESSIONS = 4;
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

export class PrimedSessionPool {
  private readonly provider: SandboxProvider;
  private readonly prelude: string;
  private readonly maxSessions: number;
  private readonly idle: SandboxSession[] = [];
  private readonly waiting: ((session: SandboxSession | null) => void)[] = [];
  private open = 0;
  private closed = false;

  constructor(provider: SandboxProvider, prelude: string, options: { maxSessions?: number } = {}) {
    this.provider = provider;
    this.prelude = prelude;
    this.maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  }

  /** Runs one code cell within timeoutMs (a fresh session's prelude is not counted). */
  async run(code: string, timeoutMs: number): Promise<PrimedCallResult> {
    let cause = '';
    // Whether every attempt's session was killed under this call (not failing to open).
    let killed = true;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const result = await this.runOnce(code, timeoutMs);
      if (result.status !== 'unavailable') return result;
      cause = attempt === 0 ? result.cause : `${cause}; retry: ${result.cause}`;
      killed = killed && result.cause.startsWith(KILLED);
    }
    if (killed && (await this.runOnce(PROBE, PROBE_TIMEOUT_MS)).status === 'ok') {
      return { status: 'error', message: `the input killed the checker's session (${cause})` };
    }
    return { status: 'unavailable', cause };
  }

  private async runOnce(code: string, timeoutMs: number): Promise<PrimedCallResult> {
    let session: SandboxSession | null;
    try {
      session = await this.acquire();
    } catch (error) {
      return { status: 'unavailable', cause: `sandbox unavailable: ${(error as Error).message}` };
    }
    if (session === null) return { status: 'unavailable', cause: 'checker closed' };
    let outcome: ExecutionOutcome;
    try {
      outcome = await session.execute(code, { timeoutMs: Math.max(1, Math.ceil(timeoutMs)) });
    } catch (error) {
      await this.discard(session);
      return { status: 'unavailable', cause: `sandbox unavailable: ${(error as Error).message}` };
    }
    if (outcome.status !== 'ok') {
      await this.discard(session);
      // A call killed for ignoring its time limit ran out of time (the input's cost, as below);
      // any other kill (crash, lost node, expired session) is the sandbox failing under it.
      if (outcome.status === 'killed' && outcome.reason.startsWith('timeout')) return { status: 'timeout' };
      if (outcome.status === 'killed') return { status: 'unavailable', cause: `${KILLED}${outcome.reason}` };
      if (outcome.status === 'error') return { status: 'error', message: outcome.exception };
      // Over the time or memory limit: the input's cost, a verdict of the grader's policy.
      return { status: 'timeout' };
    }
    this.release(session);
    return { status: 'ok', line: outcome.stdout.trim().split('\n').pop() ?? '' };
  }

  /** Closes every session this pool opened. */
  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.waiting.splice(0)) waiter(null);
    await Promise.all(this.idle.splice(0).map((session) => session.close().catch(() => undefined)));
  }

  private async acquire(): Promise<SandboxSession | null> {
    if (this.closed) return null;
    const idle = this.idle.pop();
    if (idle !== undefined) return idle;
    if (this.open >= this.maxSessions) return new Promise((resolve) => this.waiting.push(resolve));
    this.open++;
    try {
      const session = await this.provider.openSession();
      const primed = await session.execute(this.prelude, { timeoutMs: PRELUDE_TIMEOUT_MS });
      if (primed.status !== 'ok') {
        await session.close().catch(() => undefined);
        throw new Error(
          `checker prelude failed: ${primed.status === 'error' ? primed.exception : primed.status}`,
        );
      }
      return session;
    } catch (error) {
      this.open--;
      throw error;
    }
  }

  private release(session: SandboxSession): void {
    const waiter = this.waiting.shift();
    if (waiter !== undefined) waiter(session);
    else if (this.closed) void this.discard(session);
    else this.idle.push(session);
  }

  private async discard(session: SandboxSession): Promise<void> {
    this.open--;
    await session.close().catch(() => undefined);
    // A waiter gets a fresh session on its own next call; wake one so it can open one.
    const waiter = this.waiting.shift();
    if (waiter !== undefined) this.acquire().then(waiter, () => waiter(null));
  }
}
