/**
 * Runs SymbolicQuery checks in sandbox sessions. Sessions are opened lazily, primed once
 * with the checker prelude (SymPy imported, so later checks are warm), reused, and dropped
 * after a timeout or a crash (a check whose session dies is retried once on a fresh one). One checker per SandboxProvider, created on first use.
 */
import type { ExecutionOutcome, SandboxProvider, SandboxSession } from '../sandbox/types.ts';
import { SYMBOLIC_PRELUDE, symbolicCallCode } from './symbolic-program.ts';
import type { SymbolicQuery, SymbolicVerdict } from './symbolic-query.ts';

/** Time allowed for priming a fresh session (importing SymPy). */
const PRELUDE_TIMEOUT_MS = 60_000;
const MAX_SESSIONS = 4;
/** Tries per check when the sandbox fails under it (the first, then one fresh session). */
const ATTEMPTS = 2;

export class SymbolicChecker {
  private readonly provider: SandboxProvider;
  private readonly idle: SandboxSession[] = [];
  private readonly waiting: ((session: SandboxSession | null) => void)[] = [];
  private open = 0;
  private closed = false;

  constructor(provider: SandboxProvider) {
    this.provider = provider;
  }

  /**
   * Checks one query within timeoutMs (the prelude of a fresh session is not counted). A
   * session that cannot be opened or dies under the check (killed, node lost) is replaced by a
   * fresh one — on a cluster, possibly another node — once; a second failure is `unavailable`.
   */
  async check(query: SymbolicQuery, timeoutMs: number): Promise<SymbolicVerdict> {
    let cause = '';
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const verdict = await this.checkOnce(query, timeoutMs);
      if (verdict.outcome !== 'unavailable') return verdict;
      cause = attempt === 0 ? verdict.cause : `${cause}; retry: ${verdict.cause}`;
    }
    return { outcome: 'unavailable', cause };
  }

  private async checkOnce(query: SymbolicQuery, timeoutMs: number): Promise<SymbolicVerdict> {
    let session: SandboxSession | null;
    try {
      session = await this.acquire();
    } catch (error) {
      return { outcome: 'unavailable', cause: `sandbox unavailable: ${(error as Error).message}` };
    }
    if (session === null) return { outcome: 'unavailable', cause: 'checker closed' };
    let outcome: ExecutionOutcome;
    try {
      outcome = await session.execute(symbolicCallCode(query), {
        timeoutMs: Math.max(1, Math.ceil(timeoutMs)),
      });
    } catch (error) {
      await this.discard(session);
      return { outcome: 'unavailable', cause: `sandbox unavailable: ${(error as Error).message}` };
    }
    if (outcome.status !== 'ok') {
      await this.discard(session);
      // A check killed for ignoring its time limit ran out of time (the answer's cost, as below);
      // any other kill (crash, lost node, expired session) is the sandbox failing under it.
      if (outcome.status === 'killed' && outcome.reason.startsWith('timeout')) return { outcome: 'timeout' };
      if (outcome.status === 'killed')
        return { outcome: 'unavailable', cause: `session killed: ${outcome.reason}` };
      if (outcome.status === 'error') return { outcome: 'error', message: outcome.exception };
      // Over the time or memory limit: the answer's cost, a verdict of the grader's policy.
      return { outcome: 'timeout' };
    }
    this.release(session);
    const line = outcome.stdout.trim().split('\n').pop() ?? '';
    try {
      return JSON.parse(line) as SymbolicVerdict;
    } catch {
      return { outcome: 'error', message: `unreadable checker output: ${line.slice(0, 200)}` };
    }
  }

  /** Closes every session this checker opened. */
  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.waiting.splice(0)) waiter(null);
    await Promise.all(this.idle.splice(0).map((session) => session.close().catch(() => undefined)));
  }

  private async acquire(): Promise<SandboxSession | null> {
    if (this.closed) return null;
    const idle = this.idle.pop();
    if (idle !== undefined) return idle;
    if (this.open >= MAX_SESSIONS) return new Promise((resolve) => this.waiting.push(resolve));
    this.open++;
    try {
      const session = await this.provider.openSession();
      const primed = await session.execute(SYMBOLIC_PRELUDE, { timeoutMs: PRELUDE_TIMEOUT_MS });
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

const checkers = new WeakMap<SandboxProvider, SymbolicChecker>();

/** The shared checker for a provider. */
export function symbolicCheckerFor(provider: SandboxProvider): SymbolicChecker {
  let checker = checkers.get(provider);
  if (checker === undefined) {
    checker = new SymbolicChecker(provider);
    checkers.set(provider, checker);
  }
  return checker;
}

/** Closes the grader's sessions on a provider (call before closing the provider itself). */
export async function releaseSymbolicSessions(provider: SandboxProvider): Promise<void> {
  const checker = checkers.get(provider);
  checkers.delete(provider);
  await checker?.close();
}
