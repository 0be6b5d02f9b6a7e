/**
 * The sandbox the `grade` and `bench grader` commands use for the symbolic step: a remote
 * node when a URL is given, else a local pool that is started only when a grade first needs
 * SymPy (most grades never do).
 */
import type { SandboxProvider, SandboxSession } from '../../sandbox/types.ts';

type SandboxModule = {
  createLocalSandbox: (options?: Record<string, unknown>) => SandboxProvider;
  SandboxClient: new (options: { url: string }) => SandboxProvider;
};

async function loadSandboxModule(): Promise<SandboxModule> {
  const moduleUrl = new URL('../../sandbox/index.ts', import.meta.url);
  try {
    return (await import(moduleUrl.href)) as SandboxModule;
  } catch (error) {
    throw new Error(
      'the sandbox module is not available; pass --no-sandbox to grade without the symbolic step',
      {
        cause: error,
      },
    );
  }
}

/** A provider that creates the real one on the first `openSession`. */
export function openSandboxForGrading(url: string | true | undefined): SandboxProvider {
  let provider: Promise<SandboxProvider> | null = null;
  const resolve = (): Promise<SandboxProvider> => {
    provider ??= loadSandboxModule().then((module) =>
      typeof url === 'string'
        ? new module.SandboxClient({ url })
        : module.createLocalSandbox({ maxWorkers: 2, warmWorkers: 0 }),
    );
    return provider;
  };
  return {
    async openSession(): Promise<SandboxSession> {
      return (await resolve()).openSession();
    },
    async close(): Promise<void> {
      if (provider !== null) await (await provider).close();
    },
  };
}
