/**
 * The sandbox module: jailed, warm, stateful Python sessions in process (`createLocalSandbox`),
 * over HTTP (`startSandboxServer`, `SandboxClient`) and over many nodes (`SandboxClusterClient`).
 */
export { executionOutcomeSchema } from '../shared/execution-outcome.ts';
export { codeDidNotRun } from './code-did-not-run.ts';
export {
  type LocalSandboxOptions,
  localSandboxOptionsSchema,
  MAX_LOCAL_WORKERS,
  SANDBOX_MODULE_NAME,
} from './local-sandbox-options.ts';
export {
  createLocalSandbox,
  type LocalSandboxEnvironment,
  LocalSandboxPool,
  LocalSandboxSession,
  type LocalSandboxStats,
} from './local-sandbox-pool.ts';
export { RemoteSandboxSession } from './remote-sandbox-session.ts';
export { type RunCodeResponse, toRunCodeResponse } from './run-code-compat.ts';
export { SandboxClient, type SandboxClientOptions, type SandboxNodeHealth } from './sandbox-client.ts';
export {
  SandboxClusterClient,
  type SandboxClusterNodeStatus,
  type SandboxClusterOptions,
} from './sandbox-cluster-client.ts';
export {
  SandboxPoolFullError,
  SandboxRequestError,
  SandboxSessionClosedError,
  SandboxStartError,
  SandboxUnavailableError,
} from './sandbox-errors.ts';
export { type SandboxServer, type SandboxServerOptions, startSandboxServer } from './sandbox-server.ts';
export type { ExecuteOptions, ExecutionOutcome, SandboxProvider, SandboxSession } from './types.ts';
