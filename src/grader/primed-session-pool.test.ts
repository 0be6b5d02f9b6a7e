import { describe, expect, it } from 'vitest';
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
