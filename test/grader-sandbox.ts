/** The sandbox the grader tests run their symbolic checks in: the real jailed local pool. */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll } from 'vitest';
import { releaseSymbolicSessions } from '../src/grader/index.ts';
import { createLocalSandbox } from '../src/sandbox/index.ts';
import type { SandboxProvider } from '../src/sandbox/types.ts';
import { jailPython } from '../src/shared/python-environments.ts';

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

/**
 * Why a test of the Math-Verify backend cannot run here (the jail's environment lacks
 * math-verify: `bash scripts/setup.sh` installs it), or null when it can.
 */
export function mathVerifySkipReason(): string | null {
  const python = jailPython();
  const probe = spawnSync(python, ['-c', 'import math_verify'], { encoding: 'utf8' });
  return probe.status === 0
    ? null
    : `math-verify is not installed in the jail's environment (${python}); run bash scripts/setup.sh`;
}
