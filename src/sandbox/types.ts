/**
 * The sandbox contract. A session is one trajectory's Python state: variables, imports and
 * functions survive between calls. Implementations: the in-process pool of jailed workers,
 * the HTTP client for one node, and the cluster client over many nodes.
 */

/** The result of running one code cell. Expected failures are values, never exceptions. */
export type ExecutionOutcome =
  | { status: 'ok'; stdout: string; stderr: string; ms: number }
  /**
   * An exception, or `sys.exit(n)` with a non-zero status: `exitCode` is then the status the
   * process would exit with (absent for an exception, which a process reports as 1).
   */
  | { status: 'error'; stdout: string; stderr: string; exception: string; ms: number; exitCode?: number }
  | { status: 'timeout'; stdout: string; limitMs: number }
  | { status: 'memory-exceeded'; limitBytes: number }
  /** The session was reset (hard kill, crash, lost node); its Python state is gone. */
  | { status: 'killed'; reason: string };

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
