/**
 * The sandbox grader tests run against: the jailed local pool when the sandbox module is
 * present, else the plain-Python test double (grader checks only, never model text).
 */
import { existsSync } from 'node:fs';
import type { SandboxProvider } from '../src/sandbox/types.ts';
import { createPythonTestProvider } from './grader-python-provider.ts';

export async function openGraderTestSandbox(): Promise<{ sandbox: SandboxProvider; kind: string }> {
  const moduleUrl = new URL('../src/sandbox/index.ts', import.meta.url);
  if (existsSync(moduleUrl)) {
    const sandboxModule = (await import(moduleUrl.href)) as {
      createLocalSandbox?: (options: Record<string, unknown>) => SandboxProvider;
    };
    if (sandboxModule.createLocalSandbox) {
      return {
        sandbox: sandboxModule.createLocalSandbox({ maxWorkers: 2, warmWorkers: 1 }),
        kind: 'local pool',
      };
    }
  }
  return { sandbox: createPythonTestProvider(), kind: 'python test double' };
}
