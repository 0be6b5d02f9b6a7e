import { describe, expect, it } from 'vitest';
import { SimulationStalledError } from './sim-errors.ts';
import { VirtualClock } from './virtual-clock.ts';

describe('VirtualClock', () => {
  it('moves time to each timer in order, only when every task waits', async () => {
    const clock = new VirtualClock();
    const log: string[] = [];
    await clock.run(async () => {
      const a = (async () => {
        await clock.sleep(10);
        log.push(`a@${clock.now()}`);
        await clock.sleep(5);
        log.push(`a@${clock.now()}`);
      })();
      const b = (async () => {
        // A long promise chain before the sleep: it must run before time moves.
        for (let i = 0; i < 1000; i++) await Promise.resolve();
        await clock.sleep(12);
        log.push(`b@${clock.now()}`);
      })();
      await Promise.all([a, b]);
    });
    expect(log).toEqual(['a@10', 'b@12', 'a@15']);
    expect(clock.now()).toBe(15);
  });

  it('fires timers at one instant in the order they were set', async () => {
    const clock = new VirtualClock({ startMs: 100 });
    const log: number[] = [];
    await clock.run(async () => {
      await Promise.all(
        [3, 1, 2].map(async (label) => {
          await clock.sleep(7);
          log.push(label);
        }),
      );
    });
    expect(log).toEqual([3, 1, 2]);
    expect(clock.now()).toBe(107);
  });

  it('waits for code that yields to a real timers phase before moving time', async () => {
    const clock = new VirtualClock({ realFlushMs: 0 });
    const seen: number[] = [];
    await clock.run(async () => {
      const yielding = (async () => {
        await new Promise((resolve) => setTimeout(resolve, 0));
        seen.push(clock.now());
        await clock.sleep(3);
        seen.push(clock.now());
      })();
      await Promise.all([yielding, clock.sleep(100)]);
    });
    expect(seen).toEqual([0, 3]);
    expect(clock.now()).toBe(100);
  });

  it('ends a sleep early, at the virtual time of the abort', async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    let wokeAt = -1;
    await clock.run(async () => {
      const sleeper = clock.sleep(1000, controller.signal).then(() => {
        wokeAt = clock.now();
      });
      await clock.sleep(40);
      controller.abort();
      await sleeper;
    });
    expect(wokeAt).toBe(40);
    // The cancelled timer does not move time on later.
    expect(clock.now()).toBe(40);
  });

  it('reports a stall when every task waits and nothing is scheduled', async () => {
    const clock = new VirtualClock();
    const run = clock.run(async () => {
      await clock.sleep(5);
      await new Promise(() => {});
    });
    await expect(run).rejects.toBeInstanceOf(SimulationStalledError);
    expect(clock.now()).toBe(5);
  });

  it('passes the result and errors of main through', async () => {
    const clock = new VirtualClock();
    await expect(clock.run(async () => 42)).resolves.toBe(42);
    await expect(
      clock.run(async () => {
        await clock.sleep(1);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
  });

  it('runs callbacks set with schedule and skips cancelled ones', async () => {
    const clock = new VirtualClock();
    const log: string[] = [];
    await clock.run(async () => {
      clock.schedule(5, () => log.push(`x@${clock.now()}`));
      const cancelled = clock.schedule(3, () => log.push('never'));
      cancelled.cancel();
      await clock.sleep(9);
    });
    expect(log).toEqual(['x@5']);
    expect(clock.now()).toBe(9);
  });
});
