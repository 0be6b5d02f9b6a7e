import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../test/manual-clock.ts';
import { SandboxPoolFullError } from '../sandbox/sandbox-errors.ts';
import type { ExecutionOutcome, SandboxProvider } from '../sandbox/types.ts';
import { PrimedSessionPool } from './primed-session-pool.ts';

/** Sessions that run every cell, except that `kill(code)` cells kill the session under them. */
function provider(kill: (code: string) => boolean, options: { openFails?: boolean } = {}): SandboxProvider {
  return {
    async openSession() {
      if (options.openFails) throw new Error('no node');
      return {
        id: 'fake',
        async execute(code: string): Promise<ExecutionOutcome> {
          if (kill(code)) return { status: 'killed', reason: 'worker crashed' };
          return { status: 'ok', stdout: 'True\n', stderr: '', ms: 1 };
        },
        async close() {},
      };
    },
    async close() {},
  };
}

describe('PrimedSessionPool', () => {
  it('defect 8 (a policy answer that kills the checker counts as an outage): an input that kills sessions of a reachable checker is an error, not unavailable', async () => {
    const pool = new PrimedSessionPool(
      provider((code) => code.includes('poison')),
      'prelude',
    );
    const result = await pool.run('check("poison")', 1000);
    expect(result.status).toBe('error');
    expect(await pool.run('check("1")', 1000)).toEqual({ status: 'ok', line: 'True' });
    await pool.close();
  });

  it('an unreachable checker stays an outage', async () => {
    const lost = new PrimedSessionPool(
      provider((code) => code !== 'prelude'),
      'prelude',
    );
    expect((await lost.run('check("1")', 1000)).status).toBe('unavailable');
    const down = new PrimedSessionPool(
      provider(() => false, { openFails: true }),
      'prelude',
    );
    expect((await down.run('check("1")', 1000)).status).toBe('unavailable');
  });
});

/** A provider with `slots` sessions at most: beyond them `openSession` is refused as a full pool is. */
function slottedProvider(slots: number) {
  let open = 0;
  const provider: SandboxProvider = {
    async openSession() {
      if (open >= slots) throw new SandboxPoolFullError(`${slots} sessions open`);
      open++;
      let closed = false;
      return {
        id: `session-${open}`,
        async execute(): Promise<ExecutionOutcome> {
          return { status: 'ok', stdout: 'True\n', stderr: '', ms: 1 };
        },
        async close() {
          if (!closed) open--;
          closed = true;
        },
      };
    },
    async close() {},
  };
  return { provider, open: () => open };
}

describe('PrimedSessionPool idle sessions', () => {
  it('gives an idle session back to the provider after idleCloseMs, so it cannot hold a slot for good', async () => {
    const clock = new ManualClock();
    const { provider, open } = slottedProvider(1);
    const pool = new PrimedSessionPool(provider, 'prelude', { idleCloseMs: 1_000, clock });
    expect(await pool.run('check("1")', 1000)).toEqual({ status: 'ok', line: 'True' });
    // Kept primed for the next check: the one slot is taken, a trajectory would find the pool full.
    expect(open()).toBe(1);
    await expect(provider.openSession()).rejects.toMatchObject({ code: 'SANDBOX_POOL_FULL' });
    // Reused while busy (the idle clock restarts at each release)...
    clock.advance(600);
    expect(await pool.run('check("2")', 1000)).toEqual({ status: 'ok', line: 'True' });
    clock.advance(600);
    expect(open()).toBe(1);
    // ...and closed once unused for idleCloseMs: the slot is free for a trajectory.
    clock.advance(1_000);
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(open()).toBe(0);
    const trajectorySession = await provider.openSession();
    await trajectorySession.close();
    // The next check primes a fresh session.
    expect(await pool.run('check("3")', 1000)).toEqual({ status: 'ok', line: 'True' });
    expect(open()).toBe(1);
    await pool.close();
    expect(open()).toBe(0);
  });
});

describe('PrimedSessionPool on a full provider', () => {
  it('waits for a slot instead of answering unavailable: a full pool is not an outage', async () => {
    const clock = new ManualClock();
    const { provider, open } = slottedProvider(1);
    // A trajectory holds the only slot while the check starts.
    const trajectorySession = await provider.openSession();
    const pool = new PrimedSessionPool(provider, 'prelude', { clock });
    const check = pool.run('check("1")', 1000);
    clock.advance(5_000);
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(open()).toBe(1);
    await trajectorySession.close();
    expect(await clock.run(check)).toEqual({ status: 'ok', line: 'True' });
    await pool.close();
  });

  it('takes its own next free session when the provider has no slot left for another', async () => {
    const { provider, open } = slottedProvider(1);
    const pool = new PrimedSessionPool(provider, 'prelude');
    const results = await Promise.all([pool.run('check("1")', 1000), pool.run('check("2")', 1000)]);
    expect(results).toEqual([
      { status: 'ok', line: 'True' },
      { status: 'ok', line: 'True' },
    ]);
    expect(open()).toBe(1);
    await pool.close();
  });
});

describe('PrimedSessionPool time budget', () => {
  it("charges a call's run time to the budget, but not the time of a session that failed under it", async () => {
    const clock = new ManualClock();
    let sessions = 0;
    const provider: SandboxProvider = {
      async openSession() {
        const first = sessions++ === 0;
        return {
          id: `session-${sessions}`,
          async execute(code: string): Promise<ExecutionOutcome> {
            if (code === 'prelude') return { status: 'ok', stdout: '', stderr: '', ms: 0 };
            // The first session crashes after 2 s (longer than the whole budget); the next answers in 300 ms.
            clock.advance(first ? 2_000 : 300);
            return first
              ? { status: 'killed', reason: 'worker crashed' }
              : { status: 'ok', stdout: 'True\n', stderr: '', ms: 300 };
          },
          async close() {},
        };
      },
      async close() {},
    };
    const pool = new PrimedSessionPool(provider, 'prelude', { clock });
    const budget = { remainingMs: 1_000 };
    expect(await pool.run('check("1")', budget)).toEqual({ status: 'ok', line: 'True' });
    expect(budget.remainingMs).toBe(700);
    await pool.close();
  });
});
