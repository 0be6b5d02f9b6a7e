/**
 * `runRollout` with a problem history (`problem-history.jsonl`) and pre-rollout skipping
 * (`--skip-history`): problems whose groups were all right or all wrong are skipped before any
 * generation and recorded with their reason; a run stopped mid-step and resumed records every
 * group and every skip once, as the uninterrupted run does. With resample-on-correct a group
 * samples K · n members and keeps n, recording the rest. A scripted SGLang server and a
 * stand-in sandbox; grades fixed per problem.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SessionPark } from '../src/agent/index.ts';
import { createByteLevelTokenizer, createEngine } from '../src/engine/index.ts';
import { tagsDialect } from '../src/protocol/index.ts';
import type { ProblemHistoryLine } from '../src/rollout/index.ts';
import { rolloutConfigSchema, runRollout } from '../src/rollout/index.ts';
import { systemClock } from '../src/shared/clock.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';
import { functionSandbox, seededRandom, startScriptedSglangServer } from './agent-fixtures.ts';
import { expectRecordFile } from './record-checks.ts';

const tokenizer = createByteLevelTokenizer();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// easy-*: always right; hard-*: always wrong; mixed: even samples right (kept).
const problems = ['easy-1', 'hard-1', 'mixed-1', 'easy-2', 'mixed-2', 'hard-2'].map((id) => ({
  id,
  text: `problem ${id}`,
  answer: '7',
}));
const gradeOf = (trajectory: Trajectory, problemId: string) => ({
  correct: problemId.startsWith('easy')
    ? true
    : problemId.startsWith('hard')
      ? false
      : trajectory.sample % 2 === 0,
});

async function parts(reply = '\\boxed{7}') {
  const server = await startScriptedSglangServer({ model: { parts: [reply] }, tokenizer });
  const engine = createEngine({ api: 'sglang', url: server.url, timeoutMs: 30_000 });
  cleanups.push(
    () => server.close(),
    () => engine.close(),
  );
  return {
    engine,
    routerName: 'single',
    tokenizer,
    dialect: tagsDialect,
    sandbox: functionSandbox(() => ({ status: 'ok', stdout: '', stderr: '', ms: 1 })),
    park: new SessionPark(),
    grade: async (trajectory: Trajectory, problem: { id: string }) => gradeOf(trajectory, problem.id),
    clock: systemClock,
    random: seededRandom(3),
  };
}

const config = rolloutConfigSchema.parse({
  groupSize: 2,
  batchSize: 2,
  overProvision: 0,
  mode: 'sync',
  stages: [{ maxTokens: 256, maxToolCalls: 0, partialRollouts: 1 }],
  partialRollout: false,
  maxNewTokensPerTurn: 64,
});

// Always skip what the rule allows (probability 1 after one zero-variance epoch).
const skipHistory = { rule: { base: 1, max: 1, explore: 0 }, draw: () => 0 };

async function folder(): Promise<string> {
  const path = await mkdtemp(join(tmpdir(), 'agentmath-skip-'));
  cleanups.push(() => rm(path, { recursive: true, force: true }));
  return path;
}

async function historyOf(path: string): Promise<ProblemHistoryLine[]> {
  const text = await readFile(join(path, 'problem-history.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as ProblemHistoryLine);
}

async function run(
  path: string,
  options: {
    steps: number;
    resume?: boolean;
    failAt?: number;
    skip?: boolean;
    config?: typeof config;
    reply?: string;
  },
) {
  const skipped: number[] = [];
  const error = await runRollout({
    folder: path,
    resume: options.resume ?? false,
    definingConfig: { test: 'skip-history' },
    steps: options.steps,
    problems: [...problems, ...problems, ...problems],
    config: options.config ?? config,
    parts: await parts(options.reply),
    recordHistory: true,
    ...(options.skip === false ? {} : { skipHistory }),
    afterStep: async (_result, step) => {
      if (step === options.failAt) throw new Error(`trainer died at step ${step}`);
    },
    onStep: (stats) => skipped.push(stats.problemsSkipped ?? -1),
  }).then(
    () => null,
    (caught: unknown) => caught,
  );
  return { error, skipped };
}

describe('runRollout with --skip-history', () => {
  it('skips the problems whose last epoch was all right or all wrong, before generating, and says why', async () => {
    const path = await folder();
    const { error, skipped } = await run(path, { steps: 4 });
    expect(error).toBeNull();
    // Skip lines as well as group lines, written by the rollout's own writer.
    expectRecordFile(path, 'rollout/problem-history.jsonl');
    const history = await historyOf(path);
    const groups = history.filter((line) => line.type === 'group');
    const skips = history.filter((line) => line.type === 'skip');
    // Epoch 0 runs every problem once; from epoch 1 on, the easy and hard ones are skipped.
    expect(
      groups
        .filter((line) => line.epoch === 0)
        .map((line) => line.problemId)
        .sort(),
    ).toEqual(problems.map((problem) => problem.id).sort());
    expect(
      groups.filter((line) => (line.epoch ?? 0) > 0).every((line) => line.problemId.startsWith('mixed')),
    ).toBe(true);
    expect(skips.length).toBeGreaterThan(0);
    for (const skip of skips) {
      expect(skip.problemId).toMatch(/^(easy|hard)/);
      expect(skip.epoch).toBeGreaterThan(0);
      expect(skip.probability).toBe(1);
      expect(skip.reason).toMatch(/^all (right|wrong) in its last 1 epoch seen$/);
      expect(skip.streakKind).toBe(skip.problemId.startsWith('easy') ? 'all-right' : 'all-wrong');
    }
    const right = groups.find((line) => line.problemId === 'easy-1');
    expect(right).toMatchObject({
      outcome: 'all-right',
      solveRate: 1,
      dropReason: 'all-correct',
      members: 2,
    });
    expect(groups.find((line) => line.problemId === 'hard-1')).toMatchObject({
      outcome: 'all-wrong',
      solveRate: 0,
    });
    expect(groups.find((line) => line.problemId === 'mixed-1')).toMatchObject({
      outcome: 'kept',
      solveRate: 0.5,
    });
    // Each step's record counts its skips.
    expect(skipped.reduce((sum, count) => sum + count, 0)).toBe(skips.length);
  });

  it('without skipping, the same run draws the easy and hard problems again', async () => {
    const path = await folder();
    const { error, skipped } = await run(path, { steps: 4, skip: false });
    expect(error).toBeNull();
    const history = await historyOf(path);
    expect(history.some((line) => line.type === 'skip')).toBe(false);
    expect(
      history.some(
        (line) => line.type === 'group' && (line.epoch ?? 0) > 0 && !line.problemId.startsWith('mixed'),
      ),
    ).toBe(true);
    expect(skipped.every((count) => count === -1)).toBe(true);
  });

  it('a run stopped in a step and resumed records every group and skip once, as one run through', async () => {
    const through = await folder();
    expect((await run(through, { steps: 4 })).error).toBeNull();
    const stopped = await folder();
    const first = await run(stopped, { steps: 4, failAt: 2 });
    expect(String(first.error)).toContain('trainer died at step 2');
    // The stopped step's lines are in the file until the resume cuts them.
    expect((await historyOf(stopped)).some((line) => line.step === 2)).toBe(true);
    expect((await run(stopped, { steps: 4, resume: true })).error).toBeNull();
    const key = (line: ProblemHistoryLine) => `${line.type} ${line.step} ${line.problemId} ${line.epoch}`;
    const resumed = (await historyOf(stopped)).map(key);
    expect(new Set(resumed).size).toBe(resumed.length);
    expect(resumed.sort()).toEqual((await historyOf(through)).map(key).sort());
  });

  it('a group parked across the stop keeps the epoch it was drawn in', async () => {
    // Eight-token segments of a longer reply: every group runs over several steps, so the
    // checkpoint a resume starts from holds parked groups drawn before it.
    const parking = rolloutConfigSchema.parse({
      ...config,
      stages: [{ maxTokens: 4096, maxToolCalls: 0, partialRollouts: 8 }],
      partialRollout: true,
      segmentTokens: 8,
    });
    const reply = 'we add and find \\boxed{7}';
    const options = { steps: 6, config: parking, reply, skip: false };
    const through = await folder();
    expect((await run(through, options)).error).toBeNull();
    const stopped = await folder();
    expect(String((await run(stopped, { ...options, failAt: 3 })).error)).toContain('trainer died at step 3');
    const checkpoint = JSON.parse(await readFile(join(stopped, 'checkpoint.json'), 'utf8'));
    expect(checkpoint.parked.length).toBeGreaterThan(0);
    expect((await run(stopped, { ...options, resume: true })).error).toBeNull();
    const groups = (await historyOf(stopped)).filter((line) => line.type === 'group');
    expect(groups.length).toBeGreaterThan(0);
    expect(groups.filter((line) => line.epoch === null)).toEqual([]);
    const key = (line: ProblemHistoryLine) => `${line.type} ${line.step} ${line.problemId} ${line.epoch}`;
    expect((await historyOf(stopped)).map(key).sort()).toEqual((await historyOf(through)).map(key).sort());
  });
});

describe('runRollout with resample-on-correct', () => {
  it('samples K · n members, trains on n, and records the ones left out with why', async () => {
    const path = await folder();
    await runRollout({
      folder: path,
      resume: false,
      definingConfig: { test: 'resample' },
      steps: 1,
      problems: problems.filter((problem) => problem.id.startsWith('mixed')),
      config: rolloutConfigSchema.parse({ ...config, batchSize: 1, resampleOnCorrect: 2 }),
      parts: await parts(),
    });
    // The resampled members, as the schema of groups.jsonl promises them.
    expectRecordFile(path, 'rollout/groups.jsonl');
    const groups = (await readFile(join(path, 'groups.jsonl'), 'utf8'))
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line));
    const kept = groups.find((group) => group.kept);
    expect(kept.trajectoryIds).toHaveLength(2);
    expect(kept.advantages).toHaveLength(2);
    // One right, one wrong: the share of the four sampled.
    expect([...kept.correct].sort()).toEqual([false, true]);
    expect(kept.resampled.sampled).toBe(4);
    expect(kept.resampled.discarded).toHaveLength(2);
    expect(kept.resampled.discarded.map((member: { reason: string }) => member.reason).sort()).toEqual([
      'correct-more-faults',
      'uniform',
    ]);
    const all = new Set([
      ...kept.trajectoryIds,
      ...kept.resampled.discarded.map((member: { id: string }) => member.id),
    ]);
    expect(all.size).toBe(4);
  });
});
