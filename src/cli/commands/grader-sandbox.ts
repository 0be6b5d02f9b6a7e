/**
 * The sandbox the `grade` and `bench grader` commands use for the symbolic step: a remote
 * node when a URL is given, else a local pool that is started only when a grade first needs
 * SymPy (most grades never do).
 */
import { createLocalSandbox, SandboxClient } from '../../sandbox/index.ts';
import type { SandboxProvider, SandboxSession } from '../../sandbox/types.ts';

/** A provider that creates the real one on the first `openSession`. */
export function openSandboxForGrading(url: string | true | undefined): SandboxProvider {
  let provider: SandboxProvider | null = null;
  const resolve = (): SandboxProvider => {
    provider ??=
      typeof url === 'string'
        ? new SandboxClient({ url })
        : createLocalSandbox({ maxWorkers: 2, warmWorkers: 0 });
    return provider;
  };
  return {
    async openSession(): Promise<SandboxSession> {
      return resolve().openSession();
    },
    async close(): Promise<void> {
      if (provider !== null) await provider.close();
    },
  };
}
