/**
 * The sandbox contract. A session is one trajectory's Python state: variables, imports and
 * functions survive between calls. Implementations: the in-process pool of jailed workers,
 * the HTTP client for one node, and the cluster client over many nodes.
 */

import type { ExecutionOutcome } from '../shared/execution-outcome.ts';

/** The result of running one code cell (one source: `src/shared/execution-outcome.ts`). */
export type { ExecutionOutcome };

export type ExecuteOptions = { timeoutMs?: number };

/** One stateful Python session. */
export interface SandboxSession {
  readonly id: string;
  execute(code: string, options?: ExecuteOptions): Promise<ExecutionOutcome>;
  close(): Promise<void>;
}

/** Something that opens sessions: a local pool, one remote node, or a cluster. */
export interface SandboxProvider {
  openSession(): Promise<SandboxSession>;
  close(): Promise<void>;
}
