/**
 * `runRollout`'s overlap of rollout with training (`overlap`, what `train rl --max-staleness`
 * sets): with 0 the next step's rollout waits for this step's training; with 1 it runs beside
 * it; steps commit in order either way, and a training failure stops the run with that error,
 * leaving the failed step uncommitted. A scripted SGLang server, a stand-in sandbox; the order
 * of events is asserted, never time.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SessionPark } from '../src/agent/index.ts';
import { createByteLevelTokenizer, createEngine } from '../src/engine/index.ts';
import { tagsDialect } from '../src/protocol/index.ts';
import { readCheckpoint, rolloutConfigSchema, runRollout } from '../src/rollout/index.ts';
import { systemClock } from '../src/shared/clock.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';
import { functionSandbox, seededRandom, startScriptedSglangServer } from './agent-fixtures.ts';

const tokenizer = createByteLevelTokenizer();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup() {
  const folder = await mkdtemp(join(tmpdir(), 'agentmath-overlap-'));
  const server = await startScriptedSglangServer({ model: { parts: ['\\boxed{7}'] }, tokenizer });
  const engine = createEngine({ api: 'sglang', url: server.url, timeoutMs: 30_000 });
  cleanups.push(
    () => rm(folder, { recursive: true, force: true }),
    () => server.close(),
    () => engine.close(),
  );
  const parts = {
    engine,
    routerName: 'single',
    tokenizer,
    dialect: tagsDialect,
    sandbox: functionSandbox(() => ({ status: 'ok', stdout: '', stderr: '', ms: 1 })),
    park: new SessionPark(),
    // Even samples right, odd wrong: every group is kept.
    grade: async (trajectory: Trajectory) => ({ correct: trajectory.sample % 2 === 0 }),
    clock: systemClock,
    random: seededRandom(3),
  };
  return { folder, parts };
}

const config = rolloutConfigSchema.parse({
  groupSize: 2,
  batchSize: 1,
  stages: [{ maxTokens: 256, maxToolCalls: 0, partialRollouts: 1 }],
  maxNewTokensPerTurn: 64,
});
const problems = [1, 2, 3, 4].map((index) => ({ id: `p${index}`, text: `problem ${index}`, answer: '7' }));

/** Runs 3 steps; each step's training waits until the test lets it go. Returns the event log. */
async function run(overlap: number, failAt: number | null = null) {
  const { folder, parts } = await setup();
  const log: string[] = [];
  let error: unknown = null;
  await runRollout({
    folder,
    resume: false,
    definingConfig: { test: 'overlap' },
    steps: 3,
    problems,
    config,
    overlap,
    parts,
    shouldContinue: () => {
      log.push('rollout-start');
      return true;
    },
    onRolloutEnd: (_result, step) => log.push(`rollout-end ${step}`),
    afterStep: async (_result, step) => {
      log.push(`train-start ${step}`);
      // Training takes a while: a few turns of the event loop and a real timer.
      await new Promise((resolve) => setTimeout(resolve, 50));
      if (step === failAt) throw new Error(`trainer died at step ${step}`);
      log.push(`train-end ${step}`);
    },
    onStep: (stats) => log.push(`commit ${stats.step}`),
  }).catch((caught: unknown) => {
    error = caught;
  });
  return { log, error, checkpoint: await readCheckpoint(folder) };
}

describe('runRollout with overlap', () => {
  it('0: each rollout starts after the previous step trained and committed', async () => {
    const { log, error } = await run(0);
    expect(error).toBeNull();
    expect(log.indexOf('commit 0')).toBeLessThan(log.lastIndexOf('rollout-start'));
    // Strictly alternating: rollout k, train k, commit k.
    expect(log.filter((line) => line !== 'rollout-start')).toEqual([
      'rollout-end 0',
      'train-start 0',
      'train-end 0',
      'commit 0',
      'rollout-end 1',
      'train-start 1',
      'train-end 1',
      'commit 1',
      'rollout-end 2',
      'train-start 2',
      'train-end 2',
      'commit 2',
    ]);
  });

  it('1: the next rollout runs while this step trains; commits stay in order', async () => {
    const { log, error, checkpoint } = await run(1);
    expect(error).toBeNull();
    // Step 1's rollout started (and ended) before step 0's training ended.
    expect(log.indexOf('rollout-end 1')).toBeLessThan(log.indexOf('train-end 0'));
    // Never two rollouts ahead: step 2's rollout starts after step 0 committed.
    const starts = log.flatMap((line, index) => (line === 'rollout-start' ? [index] : []));
    expect(starts[2]).toBeGreaterThan(log.indexOf('commit 0'));
    expect(log.filter((line) => line.startsWith('commit'))).toEqual(['commit 0', 'commit 1', 'commit 2']);
    expect(checkpoint?.nextStep).toBe(3);
  });

  it('1: a training failure ends the run with that error; the failed step is not committed', async () => {
    const { log, error, checkpoint } = await run(1, 1);
    expect(String(error)).toContain('trainer died at step 1');
    expect(log).toContain('commit 0');
    expect(log).not.toContain('commit 1');
    expect(checkpoint?.nextStep).toBe(1);
  });
});
