/**
 * The sandbox the agent's cross-process tests use: the real local pool of jailed Python
 * workers, small and without preloaded modules so it starts fast.
 */
import { createLocalSandbox } from '../src/sandbox/index.ts';

export async function openTestSandbox() {
  return createLocalSandbox({ maxWorkers: 2, warmWorkers: 1, preload: [], acquireTimeoutMs: 60_000 });
}
