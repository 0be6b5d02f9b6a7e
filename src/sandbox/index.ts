/**
 * The sandbox module: jailed, warm, stateful Python sessions in process (`createLocalSandbox`),
 * over HTTP (`startSandboxServer`, `SandboxClient`) and over many nodes (`SandboxClusterClient`).
 */
export type { LocalSandboxOptions } from './local-sandbox-options.ts';
export {
  createLocalSandbox,
  LocalSandboxPool,
  LocalSandboxSession,
  type LocalSandboxStats,
} from './local-sandbox-pool.ts';
export {
  SandboxPoolFullError,
  SandboxRequestError,
  SandboxSessionClosedError,
  SandboxStartError,
  SandboxUnavailableError,
} from './sandbox-errors.ts';
export type { ExecuteOptions, ExecutionOutcome, SandboxProvider, SandboxSession } from './types.ts';
