import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalSandbox, type LocalSandboxPool } from '../src/sandbox/index.ts';
import { describeSandboxContract } from './sandbox-contract.ts';
import { processesOf } from './sandbox-processes.ts';

const lightPool = {
  preload: [],
  warmWorkers: 2,
  maxWorkers: 4,
  graceMs: 300,
  memoryLimitBytes: 512 * 1024 ** 2,
};

describeSandboxContract('local pool', async () => {
  const pool = createLocalSandbox(lightPool, { log: () => {} });
  await pool.ready();
  return { provider: pool, teardown: () => pool.close() };
});

describe('local pool', () => {
  let pool: LocalSandboxPool;
  beforeAll(async () => {
    pool = createLocalSandbox(
      { ...lightPool, maxWorkers: 2, acquireTimeoutMs: 100, idleTtlMs: 300 },
      { log: () => {} },
    );
    await pool.ready();
  });
  afterAll(async () => {
    await pool.close();
  });

  it('preloads SymPy, NumPy and SciPy by default', async () => {
    const warm = createLocalSandbox({ warmWorkers: 1, maxWorkers: 1 }, { log: () => {} });
    try {
      const session = await warm.openSession();
      const outcome = await session.execute(
        'import sys\nprint(all(m in sys.modules for m in ("sympy", "numpy", "scipy")))\nimport sympy\nx = sympy.symbols("x")\nprint(sympy.factor(x**2 - 1), sympy.solve(x**2 - 4, x))',
      );
      expect(outcome).toMatchObject({ status: 'ok', stdout: 'True\n(x - 1)*(x + 1) [-2, 2]\n' });
    } finally {
      await warm.close();
    }
  });

  it('throws SANDBOX_POOL_FULL when every slot holds a session', async () => {
    const sessions = [await pool.openSession(), await pool.openSession()];
    await expect(pool.openSession()).rejects.toMatchObject({ code: 'SANDBOX_POOL_FULL' });
    const waiting = pool.openSession();
    await sessions[0]!.close();
    const third = await waiting;
    expect(await third.execute('print(3)')).toMatchObject({ status: 'ok', stdout: '3\n' });
    await Promise.all([third.close(), sessions[1]!.close()]);
  });

  it('expires idle sessions, reports it once, then serves the session fresh', async () => {
    const session = await pool.openSession();
    await session.execute('value = 1');
    const uid = pool.workerUids();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(pool.stats().sessions).toBe(0);
    const outcome = await session.execute('value');
    expect(outcome.status).toBe('killed');
    if (outcome.status === 'killed') expect(outcome.reason).toMatch(/session-expired/);
    expect(await session.execute('print("again")')).toMatchObject({ status: 'ok', stdout: 'again\n' });
    await session.close();
    expect(processesOf(uid).length).toBeLessThanOrEqual(pool.stats().idleWorkers * 3);
  });

  it('leaves no process behind when a session closes', async () => {
    const session = await pool.openSession();
    await session.execute('import subprocess\nsubprocess.Popen(["sleep", "60"])');
    const before = new Set(pool.workerUids());
    await session.close();
    const after = new Set(pool.workerUids());
    const gone = [...before].filter((uid) => !after.has(uid));
    expect(gone.length).toBe(1);
    expect(processesOf(gone)).toEqual([]);
  });

  it('refills the warm set while sessions stay open', async () => {
    const refilling = createLocalSandbox({ ...lightPool, maxConcurrentStarts: 1 }, { log: () => {} });
    try {
      await refilling.ready();
      const sessions = [await refilling.openSession(), await refilling.openSession()];
      for (let attempt = 0; attempt < 200 && refilling.stats().idleWorkers < 2; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(refilling.stats()).toMatchObject({ sessions: 2, idleWorkers: 2, boundWorkers: 2 });
      await Promise.all(sessions.map((session) => session.close()));
    } finally {
      await refilling.close();
    }
  });

  it('rejects unknown options by name', () => {
    expect(() => createLocalSandbox({ maxWorker: 3 } as never)).toThrow(/maxWorker/);
  });
});
