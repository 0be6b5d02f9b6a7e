/** The sandbox the grader tests run their symbolic checks in: the real jailed local pool. */
import { afterAll, beforeAll } from 'vitest';
import { releaseSymbolicSessions } from '../src/grader/index.ts';
import { createLocalSandbox } from '../src/sandbox/index.ts';
import type { SandboxProvider } from '../src/sandbox/types.ts';

export async function openGraderTestSandbox(): Promise<{ sandbox: SandboxProvider; kind: string }> {
  return { sandbox: createLocalSandbox({ maxWorkers: 2, warmWorkers: 1 }), kind: 'local pool' };
}

/**
 * Opens the test sandbox before the enclosing suite's tests and closes it (with the grader's
 * sessions) after them; the returned function gives the open sandbox.
 */
export function useGraderTestSandbox(): () => SandboxProvider {
  let sandbox: SandboxProvider | null = null;
  beforeAll(async () => {
    ({ sandbox } = await openGraderTestSandbox());
  });
  afterAll(async () => {
    if (sandbox === null) return;
    await releaseSymbolicSessions(sandbox);
    await sandbox.close();
  });
  return () => {
    if (sandbox === null) throw new Error('the grader test sandbox is not open yet');
    return sandbox;
  };
}
