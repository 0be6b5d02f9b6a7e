/**
 * Runs SymbolicQuery checks in sandbox sessions primed once with the checker prelude (SymPy
 * imported, so later checks are warm); sessions, retries and outages are the pool's
 * (`primed-session-pool.ts`). One checker per SandboxProvider, created on first use.
 */
import type { SandboxProvider } from '../sandbox/types.ts';
import { releaseMathVerifySessions } from './math-verify-grader.ts';
import { PrimedSessionPool, type TimeBudget } from './primed-session-pool.ts';
import { SYMBOLIC_PRELUDE, symbolicCallCode } from './symbolic-program.ts';
import type { SymbolicQuery, SymbolicVerdict } from './symbolic-query.ts';

export class SymbolicChecker {
  private readonly pool: PrimedSessionPool;

  constructor(provider: SandboxProvider) {
    this.pool = new PrimedSessionPool(provider, SYMBOLIC_PRELUDE);
  }

  /**
   * Checks one query within a time limit (milliseconds, or a budget shared by one grade's
   * checks; neither counts the wait for a session or a fresh session's prelude). A
   * session that cannot be opened or dies under the check is replaced once; a second failure
   * is `unavailable`.
   */
  async check(query: SymbolicQuery, limit: number | TimeBudget): Promise<SymbolicVerdict> {
    const result = await this.pool.run(symbolicCallCode(query), limit);
    switch (result.status) {
      case 'timeout':
        return { outcome: 'timeout' };
      case 'error':
        return { outcome: 'error', message: result.message };
      case 'unavailable':
        return { outcome: 'unavailable', cause: result.cause };
      case 'ok':
        try {
          return JSON.parse(result.line) as SymbolicVerdict;
        } catch {
          return { outcome: 'error', message: `unreadable checker output: ${result.line.slice(0, 200)}` };
        }
    }
  }

  /** Closes every session this checker opened. */
  async close(): Promise<void> {
    await this.pool.close();
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

/**
 * Closes the grader's sessions on a provider, the symbolic checker's and Math-Verify's (call
 * before closing the provider itself).
 */
export async function releaseSymbolicSessions(provider: SandboxProvider): Promise<void> {
  const checker = checkers.get(provider);
  checkers.delete(provider);
  await Promise.all([checker?.close(), releaseMathVerifySessions(provider)]);
}
