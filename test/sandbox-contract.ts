/**
 * The one contract every SandboxProvider passes: the in-process pool, the HTTP client and the
 * cluster client run these same cases. Workers preload nothing here to keep tests light.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxProvider } from '../src/sandbox/index.ts';

export type ContractTarget = { provider: SandboxProvider; teardown: () => Promise<void> };

/** Registers the shared contract cases against the provider `setup` builds. */
export function describeSandboxContract(name: string, setup: () => Promise<ContractTarget>): void {
  describe(`sandbox contract: ${name}`, () => {
    let target: ContractTarget;
    beforeAll(async () => {
      target = await setup();
    });
    afterAll(async () => {
      await target?.teardown();
    });

    it('keeps variables, functions and imports between calls', async () => {
      const session = await target.provider.openSession();
      try {
        expect(
          await session.execute('import math\nbase = 10\ndef scaled(n):\n    return base * n'),
        ).toMatchObject({
          status: 'ok',
          stdout: '',
        });
        expect(await session.execute('print(scaled(4), math.factorial(5))')).toMatchObject({
          status: 'ok',
          stdout: '40 120\n',
        });
        expect(await session.execute('scaled(2) + 1')).toMatchObject({ status: 'ok', stdout: '21\n' });
        expect(await session.execute('print("a")\nscaled(2)')).toMatchObject({ status: 'ok', stdout: 'a\n' });
      } finally {
        await session.close();
      }
    });

    it('reports exceptions with the traceback tail and the output before them', async () => {
      const session = await target.provider.openSession();
      try {
        const outcome = await session.execute(
          'import sys\nprint("partial")\nprint("warn", file=sys.stderr)\n{}["k"]',
        );
        expect(outcome.status).toBe('error');
        if (outcome.status !== 'error') return;
        expect(outcome.stdout).toBe('partial\n');
        expect(outcome.stderr).toBe('warn\n');
        expect(outcome.exception).toMatch(/KeyError: 'k'$/);
        expect(await session.execute('def broken(:')).toMatchObject({ status: 'error' });
      } finally {
        await session.close();
      }
    });

    it('interrupts a slow call at its timeout and keeps the session', async () => {
      const session = await target.provider.openSession();
      try {
        await session.execute('survivor = 7');
        const outcome = await session.execute('import time\nprint("begin")\ntime.sleep(30)', {
          timeoutMs: 300,
        });
        expect(outcome).toEqual({ status: 'timeout', stdout: 'begin\n', limitMs: 300 });
        expect(await session.execute('survivor')).toMatchObject({ status: 'ok', stdout: '7\n' });
      } finally {
        await session.close();
      }
    });

    it('kills code that disables its timer, says so, and starts the next call fresh', async () => {
      const session = await target.provider.openSession();
      try {
        await session.execute('lost = 1');
        const code =
          'import signal\nsignal.setitimer(signal.ITIMER_REAL, 0)\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass';
        const outcome = await session.execute(code, { timeoutMs: 200 });
        expect(outcome.status).toBe('killed');
        if (outcome.status === 'killed') expect(outcome.reason).toMatch(/timeout/);
        const after = await session.execute('lost');
        expect(after.status).toBe('error');
        if (after.status === 'error') expect(after.exception).toMatch(/NameError/);
      } finally {
        await session.close();
      }
    });

    it('reports memory-exceeded and gives the session a fresh state', async () => {
      const session = await target.provider.openSession();
      try {
        await session.execute('small = 1');
        expect(await session.execute('block = bytearray(8 * 1024 ** 3)')).toMatchObject({
          status: 'memory-exceeded',
        });
        expect(await session.execute('print(1 + 1)')).toMatchObject({ status: 'ok', stdout: '2\n' });
      } finally {
        await session.close();
      }
    });

    it('isolates sessions from each other', async () => {
      const [first, second] = await Promise.all([
        target.provider.openSession(),
        target.provider.openSession(),
      ]);
      try {
        expect(first.id).not.toBe(second.id);
        await first.execute('secret = "first"\nopen("/tmp/mark", "w").write("x")');
        const outcome = await second.execute(
          'import os\nprint("secret" in globals(), os.path.exists("/tmp/mark"))',
        );
        expect(outcome).toMatchObject({ status: 'ok', stdout: 'False False\n' });
      } finally {
        await Promise.all([first.close(), second.close()]);
      }
    });

    it('caps output and reports its total size', async () => {
      const session = await target.provider.openSession();
      try {
        const outcome = await session.execute('for i in range(200000):\n    print(i)');
        expect(outcome.status).toBe('ok');
        if (outcome.status !== 'ok') return;
        expect(outcome.stdout.length).toBeLessThan(70_000);
        expect(outcome.stdout).toMatch(/output truncated: 1288890 bytes in total/);
      } finally {
        await session.close();
      }
    });

    it('runs concurrent calls on one session one after another', async () => {
      const session = await target.provider.openSession();
      try {
        await session.execute('counter = 0');
        const outcomes = await Promise.all(
          Array.from({ length: 5 }, () => session.execute('counter += 1\nprint(counter)')),
        );
        const printed = outcomes.map((outcome) =>
          outcome.status === 'ok' ? outcome.stdout.trim() : outcome.status,
        );
        expect(printed.sort()).toEqual(['1', '2', '3', '4', '5']);
      } finally {
        await session.close();
      }
    });

    it('refuses calls on a closed session with SANDBOX_SESSION_CLOSED', async () => {
      const session = await target.provider.openSession();
      await session.close();
      await session.close();
      await expect(session.execute('1')).rejects.toMatchObject({ code: 'SANDBOX_SESSION_CLOSED' });
    });
  });
}
