import { describe, expect, it } from 'vitest';
import { createSeededRandom } from '../tasks/seeded-random.ts';
import { SimulatedSandbox } from './simulated-sandbox.ts';
import { plannedCode } from './trajectory-plan.ts';
import { VirtualClock } from './virtual-clock.ts';

describe('SimulatedSandbox', () => {
  it('queues calls when every worker is busy and prints the planned output', async () => {
    const clock = new VirtualClock();
    const sandbox = new SimulatedSandbox({
      clock,
      workers: 2,
      latencyMs: { constant: 100 },
      random: createSeededRandom(1),
    });
    const finished = await clock.run(async () => {
      const sessions = await Promise.all([1, 2, 3].map(() => sandbox.openSession()));
      return Promise.all(
        sessions.map(async (session, index) => {
          const outcome = await session.execute(plannedCode(5 + index));
          return { atMs: clock.now(), outcome };
        }),
      );
    });
    expect(finished.map((call) => call.atMs)).toEqual([100, 100, 200]);
    expect(finished[2]?.outcome).toEqual({ status: 'ok', stdout: 'yyyyyy\n', stderr: '', ms: 100 });
    expect(sandbox.metrics()).toEqual({ calls: 3, busyMs: 300, queuedMs: 100 });
  });

  it('answers code that is not a planned call with an error outcome', async () => {
    const clock = new VirtualClock();
    const sandbox = new SimulatedSandbox({
      clock,
      workers: 1,
      latencyMs: { constant: 5 },
      random: createSeededRandom(1),
    });
    const outcome = await clock.run(async () => (await sandbox.openSession()).execute('import os'));
    expect(outcome.status).toBe('error');
  });
});
