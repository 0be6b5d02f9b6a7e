/** The sandbox the grader tests run their symbolic checks in: the real jailed local pool. */
import { createLocalSandbox } from '../src/sandbox/index.ts';
import type { SandboxProvider } from '../src/sandbox/types.ts';

export async function openGraderTestSandbox(): Promise<{ sandbox: SandboxProvider; kind: string }> {
  return { sandbox: createLocalSandbox({ maxWorkers: 2, warmWorkers: 1 }), kind: 'local pool' };
}
