/**
 * A rollout step against the real local pool of jailed workers when there are more
 * trajectories than sandbox slots (as in `train rl`: 4 groups of 8 at once, 8 workers), with a
 * scripted model behind a real SGLang `/generate` server. A trajectory that finds every slot
 * held waits for one, as it waits on the engine: a full pool is a queue, not an outage, and no
 * trajectory is lost to it. And every session a step opened is closed or parked when it ends,
 * also when stale groups are restarted whole or dropped (nothing leaks slots from step to step).
 * Assertions are on outcomes and counts, never on wall time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SessionPark } from '../src/agent/index.ts';
import { createByteLevelTokenizer, createEngine } from '../src/engine/index.ts';
import { tagsDialect } from '../src/protocol/index.ts';
import {
  initialRolloutState,
  type RolloutProblem,
  type RolloutState,
  rolloutConfigSchema,
  runRolloutStep,
} from '../src/rollout/index.ts';
import type { RolloutParts } from '../src/rollout/types.ts';
import { createLocalSandbox, type LocalSandboxPool, type SandboxProvider } from '../src/sandbox/index.ts';
import { systemClock } from '../src/shared/clock.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';
import { type ScriptPart, seededRandom, startScriptedSglangServer } from './agent-fixtures.ts';

const tokenizer = createByteLevelTokenizer();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Two code calls (the second reads the first's variable: the session's state), then the answer. */
const PARTS: ScriptPart[] = [
  '<code>\nx = 6 * 7\nprint(x)\n</code>',
  '<code>\nprint(x)\n</code>',
  (output) => `\\boxed{${output.trim()}}`,
];

function deferred() {
  let open = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** The real pool, small, and the refusals it answered (`SANDBOX_POOL_FULL`). */
async function smallPool(maxWorkers: number) {
  // A short acquire wait: the pool refuses soon, so a trajectory that gives up on a full pool shows.
  const pool = createLocalSandbox(
    { maxWorkers, warmWorkers: maxWorkers, preload: [], acquireTimeoutMs: 50 },
    { log: () => {} },
  );
  cleanups.push(() => pool.close());
  await pool.ready();
  const refused = deferred();
  let refusals = 0;
  const provider: SandboxProvider = {
    openSession: async () => {
      try {
        return await pool.openSession();
      } catch (error) {
        refusals++;
        refused.open();
        throw error;
      }
    },
    close: () => pool.close(),
  };
  return { pool, provider, refused: refused.promise, refusals: () => refusals };
}

/**
 * A scripted SGLang server reporting policy version `version()`; a call made after an
 * interpreter output (its trajectory holds a session) waits for `gate` when one is given.
 */
async function scriptedEngine(options: { gate?: Promise<void>; version?: () => number } = {}) {
  const { gate, version = () => 0 } = options;
  const server = await startScriptedSglangServer({
    model: { parts: PARTS },
    tokenizer,
    weightVersion: () => String(version()),
    gate: async (_call, context) => {
      const response = context.slice(context.lastIndexOf('<|assistant|>'));
      if (gate !== undefined && response.includes('</interpreter>')) await gate;
    },
  });
  const engine = createEngine({ api: 'sglang', url: server.url, timeoutMs: 30_000 });
  cleanups.push(
    () => server.close(),
    () => engine.close(),
  );
  return engine;
}

function stepParts(
  engine: RolloutParts['engine'],
  sandbox: SandboxProvider,
  park: SessionPark,
): RolloutParts {
  return {
    engine,
    routerName: 'single',
    tokenizer,
    dialect: tagsDialect,
    sandbox,
    park,
    // Even samples right, odd wrong: every group carries a signal.
    grade: async (trajectory: Trajectory) => ({
      correct: trajectory.answer === '42' && trajectory.sample % 2 === 0,
    }),
    clock: systemClock,
    random: seededRandom(3),
  };
}

function problems(count: number) {
  const list: RolloutProblem[] = Array.from({ length: count }, (_, index) => ({
    id: `p${index}`,
    text: `problem ${index}`,
    answer: '42',
  }));
  let index = 0;
  return { next: () => list[index++] ?? null };
}

/** Sessions of the pool still open: held by nobody once every trajectory ended or parked. */
function openBeyondPark(pool: LocalSandboxPool, park: SessionPark): number {
  return pool.stats().sessions - park.size;
}

describe('rollout with more trajectories than sandbox slots', () => {
  it('a trajectory that finds every slot held waits for one: no trajectory is lost to a full pool', async () => {
    const { pool, provider, refused, refusals } = await smallPool(2);
    // Trajectories holding a slot take their next turn only once the pool has refused someone.
    const engine = await scriptedEngine({ gate: refused });
    const park = new SessionPark();
    const config = rolloutConfigSchema.parse({
      groupSize: 4,
      batchSize: 1,
      overProvision: 0,
      partialRollout: false,
    });
    const finished: Trajectory[] = [];
    const result = await runRolloutStep(
      {
        step: 0,
        policyVersion: 0,
        config,
        state: initialRolloutState(),
        problems: problems(1),
        agent: { sampling: { temperature: 1, topP: 1 } },
      },
      {
        ...stepParts(engine, provider, park),
        onEvent: (event) => {
          if (event.type === 'trajectory-finish') finished.push(event.trajectory);
        },
      },
    );
    // Four trajectories, two slots: some had to wait, and the pool did refuse them at least once.
    expect(refusals()).toBeGreaterThan(0);
    expect(finished.map((trajectory) => trajectory.finish)).toEqual(
      Array.from({ length: 4 }, () => ({ reason: 'answer' })),
    );
    expect(finished.map((trajectory) => trajectory.answer)).toEqual(['42', '42', '42', '42']);
    expect(result.stats).toMatchObject({ trajectoriesFinished: 4, rewardsMissing: 0, groupsKept: 1 });
    expect(openBeyondPark(pool, park)).toBe(0);
    expect(park.size).toBe(0);
  });

  it('a synchronous round with more code-running trajectories than slots finishes (the waiters leave the turn barrier)', async () => {
    // Without that, the two holding a slot wait at the barrier for the two waiting for a slot.
    const { pool, provider } = await smallPool(2);
    const engine = await scriptedEngine();
    const park = new SessionPark();
    const config = rolloutConfigSchema.parse({
      groupSize: 4,
      batchSize: 1,
      mode: 'sync',
      partialRollout: false,
    });
    const result = await runRolloutStep(
      {
        step: 0,
        policyVersion: 0,
        config,
        state: initialRolloutState(),
        problems: problems(1),
        agent: { sampling: { temperature: 1, topP: 1 } },
      },
      stepParts(engine, provider, park),
    );
    expect(result.stats).toMatchObject({ trajectoriesFinished: 4, rewardsMissing: 0, groupsKept: 1 });
    expect(openBeyondPark(pool, park)).toBe(0);
  }, 60_000);

  it.each(['restart', 'drop'] as const)(
    'stale groups (%s) give back every parked session: no slot leaks from step to step',
    async (stalePolicy) => {
      const { pool, provider } = await smallPool(4);
      let version = 0;
      const engine = await scriptedEngine({ version: () => version });
      const park = new SessionPark();
      // One code call per segment: every trajectory parks after its first call, holding its session.
      const config = rolloutConfigSchema.parse({
        groupSize: 2,
        batchSize: 1,
        overProvision: 1,
        partialRollout: true,
        segmentToolCalls: 1,
        stages: [{ maxTokens: 4_000, maxToolCalls: 4, partialRollouts: 2 }],
        maxPolicyLag: 0,
        stalePolicy,
      });
      const step = (index: number, policyVersion: number, state: RolloutState) =>
        runRolloutStep(
          {
            step: index,
            policyVersion,
            config,
            state,
            problems: problems(4),
            agent: { sampling: { temperature: 1, topP: 1 } },
          },
          stepParts(engine, provider, park),
        );
      const first = await step(0, 0, initialRolloutState());
      expect(first.stats.trajectoriesParked).toBe(4);
      expect(park.size).toBe(4);
      expect(openBeyondPark(pool, park)).toBe(0);
      // A new policy: every parked trajectory is now stale (maxPolicyLag 0).
      version = 1;
      const second = await step(1, 1, first.state);
      expect(second.stats.trajectoriesStale).toBe(4);
      expect(openBeyondPark(pool, park)).toBe(0);
      version = 2;
      const third = await step(2, 2, second.state);
      expect(openBeyondPark(pool, park)).toBe(0);
      expect(pool.stats().sessions).toBe(park.size);
      expect(third.stats.rewardsMissing).toBe(0);
      await park.closeAll();
      expect(pool.stats().sessions).toBe(0);
    },
  );
});
