/**
 * The jail's libraries beyond SymPy: each documented example (docs/sandbox.md) runs in a real
 * jailed session and prints the documented output, and the tool prompt names every library the
 * jail's environment holds, with the version that imports there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instructedPrompt } from '../src/agent/index.ts';
import { markdownDialect, tagsDialect } from '../src/protocol/index.ts';
import { createLocalSandbox, type LocalSandboxPool } from '../src/sandbox/index.ts';
import { jailLibraries } from '../src/shared/jail-libraries.ts';
import { jailLibraryExamples } from './jail-library-examples.ts';

describe('libraries in the jail', () => {
  let pool: LocalSandboxPool;
  beforeAll(() => {
    pool = createLocalSandbox({ preload: [], warmWorkers: 1, maxWorkers: 2 }, { log: () => {} });
  });
  afterAll(async () => {
    await pool.close();
  });

  it('documents one example per added library', () => {
    expect(jailLibraryExamples().map((example) => example.library)).toEqual([
      'python-flint',
      'z3-solver',
      'networkx',
      'mpmath',
    ]);
  });

  for (const example of jailLibraryExamples()) {
    it(`runs the ${example.library} example in the jail`, async () => {
      const session = await pool.openSession();
      try {
        const outcome = await session.execute(example.code, { timeoutMs: 30_000 });
        expect(outcome).toMatchObject({ status: 'ok', stdout: `${example.output}\n` });
      } finally {
        await session.close();
      }
    });
  }

  it('names each library of the environment in the tool prompt of both dialects, with the version the jail imports', async () => {
    const { libraries } = jailLibraries();
    const systems = [tagsDialect, markdownDialect].map(
      (dialect) => instructedPrompt({ id: 'p', text: 'x' }, dialect)[0]!.content,
    );
    const session = await pool.openSession();
    try {
      for (const library of ['python-flint', 'z3-solver', 'networkx', 'mpmath']) {
        const found = libraries.find((item) => item.name === library);
        expect(found, library).toBeDefined();
        for (const system of systems) expect(system).toContain(`${library} ${found!.version}`);
        const probe = await session.execute(
          `import importlib.metadata, ${found!.importName}\nprint(importlib.metadata.version(${JSON.stringify(library)}))`,
          { timeoutMs: 30_000 },
        );
        expect(probe).toMatchObject({ status: 'ok', stdout: `${found!.version}\n` });
      }
    } finally {
      await session.close();
    }
  });
});
