import { describe, expect, it } from 'vitest';
import { type PausableEngine, syncWeightsFromDisk } from './weight-sync.ts';

type Call = string;

/** An engine double that logs its routes; `down` rejects every call as a dead server would. */
function engine(name: string, log: Call[], behaviour: { down?: boolean; refuse?: boolean } = {}) {
  const call = async (route: string) => {
    log.push(`${name} ${route}`);
    if (behaviour.down) throw new Error(`connect ECONNREFUSED ${name}`);
  };
  return {
    name,
    pauseGeneration: () => call('pause'),
    continueGeneration: () => call('continue'),
    updateWeightsFromDisk: async (path: string, options?: { weightVersion?: number }) => {
      await call(`load ${path} v${options?.weightVersion}`);
      return behaviour.refuse
        ? { success: false, message: 'shape mismatch' }
        : { success: true, message: 'ok' };
    },
  } as unknown as PausableEngine;
}

const trainer = { exportModel: async (path: string) => ({ path, policyVersion: 5 }) };

describe('syncWeightsFromDisk', () => {
  it('loads the export on every engine with its policy version, between pause and continue', async () => {
    const log: Call[] = [];
    const result = await syncWeightsFromDisk({
      trainer,
      engines: [engine('a', log), engine('b', log)],
      path: '/run/policy/v5',
    });
    expect(result.unreachable).toEqual([]);
    expect(log).toEqual([
      'a pause',
      'b pause',
      'a load /run/policy/v5 v5',
      'b load /run/policy/v5 v5',
      'a continue',
      'b continue',
    ]);
  });

  it('a replica that cannot be reached stops the sync unless told to go on; the others always continue', async () => {
    const log: Call[] = [];
    const engines = [engine('a', log), engine('dead', log, { down: true })];
    await expect(syncWeightsFromDisk({ trainer, engines, path: '/p' })).rejects.toMatchObject({
      code: 'WEIGHT_SYNC_FAILED',
      message: expect.stringContaining('dead could not be reached'),
    });
    expect(log).toContain('a continue');
    const tolerant = await syncWeightsFromDisk({ trainer, engines, path: '/p', tolerateUnreachable: true });
    expect(tolerant.unreachable).toEqual(['dead']);
    expect(log.filter((line) => line.startsWith('a load'))).toHaveLength(2);
  });

  it('with every engine unreachable, or one refusing the weights, the sync fails', async () => {
    const log: Call[] = [];
    await expect(
      syncWeightsFromDisk({
        trainer,
        engines: [engine('x', log, { down: true })],
        path: '/p',
        tolerateUnreachable: true,
      }),
    ).rejects.toThrow(/no engine left/);
    await expect(
      syncWeightsFromDisk({
        trainer,
        engines: [engine('a', log), engine('b', log, { refuse: true })],
        path: '/p',
        tolerateUnreachable: true,
      }),
    ).rejects.toThrow(/refused by b \(shape mismatch\)/);
    expect(log.slice(-2)).toEqual(['a continue', 'b continue']);
  });
});
