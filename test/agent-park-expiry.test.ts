/**
 * Parked sessions that cannot lie, against the real pool of jailed Python workers: a parked
 * session the pool expired is rebuilt by replay (never reported `killed` for code that did not
 * run), and a park over capacity evicts, falling back to replay.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type AgentEvent,
  problemOnlyPrompt,
  resumeAgent,
  runAgent,
  SessionPark,
} from '../src/agent/index.ts';
import { createByteLevelTokenizer } from '../src/engine/index.ts';
import { tagsDialect } from '../src/protocol/index.ts';
import { createLocalSandbox, type LocalSandboxPool } from '../src/sandbox/index.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';
import { ScriptedEngine, type ScriptPart } from './agent-fixtures.ts';
import { ManualClock } from './manual-clock.ts';

const tokenizer = createByteLevelTokenizer();
const parts: ScriptPart[] = [
  '<think>Store it.\n<code>\nsecret = 41\nprint("stored")\n</code>',
  () => 'Now use it.\n<code>\nprint(secret + 1)\n</code>',
  (output) => `It is ${output.trim()}.\n</think>\n\\boxed{${output.trim()}}`,
];

const pools: LocalSandboxPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

function agentOptions(sandbox: LocalSandboxPool, park: SessionPark, events: AgentEvent[] = []) {
  return {
    engine: new ScriptedEngine({ model: { parts }, tokenizer }),
    tokenizer,
    sandbox,
    dialect: tagsDialect,
    prompt: problemOnlyPrompt,
    park,
    budgets: { segment: { maxToolCalls: 1 } },
    onEvent: (event: AgentEvent) => events.push(event),
  };
}

async function firstSegment(sandbox: LocalSandboxPool, park: SessionPark, id: string) {
  const trajectory = await runAgent(
    { id, text: 'Remember 41, then add one.' },
    { ...agentOptions(sandbox, park), createId: () => id },
  );
  expect(trajectory.finish?.reason).toBe('segment-budget');
  expect(trajectory.toolCalls[0]?.outcome).toMatchObject({ status: 'ok', stdout: 'stored\n' });
  return trajectory;
}

async function finish(trajectory: Trajectory, sandbox: LocalSandboxPool, park: SessionPark) {
  const events: AgentEvent[] = [];
  const options = { ...agentOptions(sandbox, park, events), budgets: {} };
  const done = await resumeAgent(trajectory, options);
  return { done, restores: events.filter((event) => event.type === 'session-restore') };
}

describe('parked sessions', () => {
  it('rebuilds a parked session the pool expired by replay, never answering killed', async () => {
    const clock = new ManualClock();
    const sandbox = createLocalSandbox(
      { maxWorkers: 2, warmWorkers: 1, preload: [], idleTtlMs: 1_000 },
      { clock, log: () => {} },
    );
    pools.push(sandbox);
    const park = new SessionPark();
    const paused = await firstSegment(sandbox, park, 't-expired');
    expect(park.size).toBe(1);
    // Time passes while the trajectory is parked: the pool's sweep expires the idle session.
    clock.advance(5_000);
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(sandbox.stats().sessions).toBe(0);

    const { done, restores } = await finish(paused, sandbox, park);
    expect(done.toolCalls.map((call) => call.outcome.status)).toEqual(['ok', 'ok']);
    expect(done.toolCalls[1]?.outcome).toMatchObject({ stdout: '42\n' });
    expect(done.answer).toBe('42');
    expect(restores).toHaveLength(1);
    expect(restores[0]).toMatchObject({ replayedCalls: 1 });
  });

  it('evicts beyond its capacity; the evicted trajectory resumes by replay', async () => {
    const sandbox = createLocalSandbox({ maxWorkers: 2, warmWorkers: 1, preload: [] }, { log: () => {} });
    pools.push(sandbox);
    const park = new SessionPark({ capacity: 1 });
    const first = await firstSegment(sandbox, park, 't-first');
    const second = await firstSegment(sandbox, park, 't-second');
    expect(park.size).toBe(1);
    expect(park.evicted).toBe(1);
    expect(sandbox.stats().sessions).toBe(1);

    const evicted = await finish(first, sandbox, park);
    expect(evicted.done.answer).toBe('42');
    expect(evicted.restores).toHaveLength(1);
    const kept = await finish(second, sandbox, park);
    expect(kept.done.answer).toBe('42');
    expect(kept.restores).toHaveLength(0);
    expect(park.size).toBe(0);
  });
});
