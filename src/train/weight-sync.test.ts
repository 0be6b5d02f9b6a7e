import { describe, expect, it } from 'vitest';
import { EngineUnavailableError } from '../engine/engine-errors.ts';
import type { Clock } from '../shared/clock.ts';
import { type PausableEngine, syncWeightsFromDisk } from './weight-sync.ts';

type Call = string;

type Behaviour = {
  /** Every call fails to connect, as to a dead server. */
  down?: boolean;
  /** The load answers `success: false` with this message (SGLang's HTTP 400). */
  refuse?: string;
  /** Flushes that fail before one succeeds (requests still finishing after the abort). */
  busyFlushes?: number;
  /** The version reported after the load, when not the one sent. */
  reports?: string;
};

/** An engine double that logs its routes in order. */
function engine(name: string, log: Call[], behaviour: Behaviour = {}): PausableEngine {
  let version: string | null = '0';
  let busy = behaviour.busyFlushes ?? 0;
  const call = async (route: string) => {
    log.push(`${name} ${route}`);
    if (behaviour.down) throw new EngineUnavailableError(`http://${name}`, true);
  };
  return {
    name,
    generate: async () => {
      throw new Error('not used');
    },
    pauseGeneration: (mode) => call(`pause ${mode}`),
    continueGeneration: () => call('continue'),
    flushCache: async () => {
      await call('flush');
      if (busy > 0) {
        busy--;
        return { success: false, message: 'Cache not flushed because there are pending requests.' };
      }
      return { success: true, message: 'Cache flushed.' };
    },
    updateWeightsFromDisk: async (path, options) => {
      await call(`load ${path} v${options?.weightVersion}`);
      if (behaviour.refuse !== undefined) return { success: false, message: behaviour.refuse };
      version = behaviour.reports ?? String(options?.weightVersion);
      return { success: true, message: 'ok' };
    },
    weightVersion: async () => {
      await call('version');
      return version;
    },
  };
}

const trainer = { exportModel: async (path: string) => ({ path, policyVersion: 5 }) };
const sleeps: number[] = [];
const clock: Clock = {
  now: () => 0,
  sleep: async (ms) => {
    sleeps.push(ms);
  },
};
const sync = (engines: PausableEngine[], extra: { tolerateUnreachable?: boolean } = {}) =>
  syncWeightsFromDisk({ trainer, engines, path: '/run/policy/v5', clock, ...extra });

describe('syncWeightsFromDisk', () => {
  it('pauses with abort, flushes until the flush succeeds, loads, checks the version, continues', async () => {
    const log: Call[] = [];
    sleeps.length = 0;
    const result = await sync([engine('a', log, { busyFlushes: 2 }), engine('b', log)]);
    expect(result.unreachable).toEqual([]);
    expect(result.engines).toEqual([
      { name: 'a', weightVersion: '5' },
      { name: 'b', weightVersion: '5' },
    ]);
    expect(log.filter((line) => line.startsWith('a '))).toEqual([
      'a pause abort',
      'a flush',
      'a flush',
      'a flush',
      'a load /run/policy/v5 v5',
      'a version',
      'a continue',
    ]);
    // Each step is done on every engine before the next starts.
    const order = ['pause', 'flush', 'load', 'version', 'continue'];
    const steps = log.map((line) => order.indexOf(line.split(' ')[1]!));
    expect(steps).toEqual([...steps].sort((x, y) => x - y));
    expect(sleeps).toEqual([500, 500]);
  });

  it('an engine that refuses the weights stops the sync, named with its message; all continue', async () => {
    const log: Call[] = [];
    const refusal = 'Failed to update weights: shape mismatch.\nRolling back to original weights.';
    await expect(
      sync([engine('a', log), engine('b', log, { refuse: refusal })], { tolerateUnreachable: true }),
    ).rejects.toMatchObject({
      code: 'WEIGHT_SYNC_FAILED',
      message: expect.stringContaining(`refused by b (${refusal})`),
    });
    expect(log.slice(-2)).toEqual(['a continue', 'b continue']);
  });

  it('a flush that never succeeds, or a version the engine does not report, is a refusal', async () => {
    const log: Call[] = [];
    await expect(sync([engine('busy', log, { busyFlushes: 1000 })])).rejects.toThrow(
      /refused by busy \(its cache flush still failed after 60 tries, 500 ms apart: Cache not flushed/,
    );
    expect(log.filter((line) => line.includes('load'))).toEqual([]);
    await expect(sync([engine('stale', log, { reports: '4' })])).rejects.toThrow(
      /refused by stale \(it reports weight_version "4" after loading v5\)/,
    );
  });

  it('an engine that cannot be connected to is skipped only when tolerated, and never the last one', async () => {
    const log: Call[] = [];
    const engines = [engine('a', log), engine('dead', log, { down: true })];
    await expect(sync(engines)).rejects.toThrow(/dead could not be reached/);
    expect(log).toContain('a continue');
    const tolerant = await sync(engines, { tolerateUnreachable: true });
    expect(tolerant.unreachable).toEqual(['dead']);
    expect(tolerant.engines).toEqual([
      { name: 'a', weightVersion: '5' },
      { name: 'dead', weightVersion: null },
    ]);
    // The dead engine was tried once (the pause) and not again until its continue.
    expect(log.filter((line) => line.startsWith('dead')).slice(-2)).toEqual([
      'dead pause abort',
      'dead continue',
    ]);
    await expect(sync([engine('x', log, { down: true })], { tolerateUnreachable: true })).rejects.toThrow(
      /no engine left/,
    );
  });
});
