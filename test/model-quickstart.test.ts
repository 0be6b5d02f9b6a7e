/**
 * `quickstart --model` end to end through the real stages, on a tiny random Qwen3 from
 * `model init` standing in for the pulled model (placed where `model pull` caches
 * smollm2-135m-instruct under a temporary project root, so the name goes through the pull's
 * own cache path): the SFT data written with code run in the jail, the baseline evaluated
 * by its PyTorch worker, SFT on the distributed trainer stopped by the signal after step 2,
 * then a second quickstart that reuses the data and the baseline, resumes SFT from its
 * checkpoint, evaluates the SFT model, runs RL from it and evaluates that; a third reuses every
 * stage. And the command line: an unknown model name is exit 2 naming the known ones.
 * Assertions are on records and results, never on time.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRunTrajectories } from '../src/eval/run-folder.ts';
import { IMPORT_MARKER_FILE, initHfModel, pulledModelFolder } from '../src/model/index.ts';
import {
  type ModelQuickstartEvent,
  type ModelQuickstartOptions,
  runModelQuickstart,
} from '../src/quickstart/model-quickstart.ts';
import { startCli } from './cli-process.ts';
import { expectRecordFile, expectRecordFiles } from './record-checks.ts';

let root: string;
let options: ModelQuickstartOptions;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'agentmath-model-quickstart-'));
  const cached = pulledModelFolder('smollm2-135m-instruct', root);
  await mkdir(dirname(cached), { recursive: true });
  await initHfModel({ arch: 'qwen3', out: cached, hidden: 64, seed: 1 });
  // What a finished import leaves: the marker `model pull` reads its cache by.
  await writeFile(join(cached, IMPORT_MARKER_FILE), JSON.stringify({ dtype: 'float32' }));
  options = {
    model: { type: 'pullable', name: 'smollm2-135m-instruct' },
    root,
    outDir: join(root, 'runs', 'quickstart-smollm2-135m-instruct'),
    count: 3,
    concurrency: 3,
    maxTokens: 256,
    trainProblems: 16,
    trainMinutes: 10,
    rlMinutes: 0.05,
    sftConfig: { steps: 4, batchSize: 4, learningRate: 1e-3, warmupSteps: 1, checkpointEvery: 4 },
    rlConfig: { batchSize: 1, groupSize: 2, problemPool: 4, temperature: 0.8 },
  };
}, 120_000);

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Right answers of a run folder, by problem id. */
async function rightIds(runDir: string): Promise<Set<string | null>> {
  const trajectories = await readRunTrajectories(runDir);
  return new Set(trajectories.filter((t) => t.meta?.correct === true).map((t) => t.problemId));
}

describe('quickstart --model', () => {
  it('runs pull → baseline → SFT → RL with each evaluated, resumes a stopped SFT, reuses finished stages', async () => {
    // 1. Stopped by the signal once SFT has taken step 2: the stages before it are finished.
    const stop = new AbortController();
    const first: ModelQuickstartEvent[] = [];
    await expect(
      runModelQuickstart({
        ...options,
        signal: stop.signal,
        onEvent: (event) => {
          first.push(event);
          if (event.type === 'sft-event' && event.event.type === 'train-step' && event.event.step === 2) {
            stop.abort(new Error('stopped by the test'));
          }
        },
      }),
    ).rejects.toThrow('stopped by the test');
    expect(first[0]).toMatchObject({ type: 'model-ready', how: 'cached' });
    expect(first.filter((event) => event.type === 'stage-finish').map((event) => event.stage)).toEqual([
      'data',
      'eval-baseline',
    ]);
    expect(first.some((event) => event.type === 'sft-event' && event.event.type === 'checkpoint-saved')).toBe(
      true,
    );

    // 2. Again: data and baseline reused, SFT resumed at step 2, then the rest.
    const second: ModelQuickstartEvent[] = [];
    const result = await runModelQuickstart({ ...options, onEvent: (event) => second.push(event) });
    expect(result.stages.map(({ stage, status }) => [stage, status])).toEqual([
      ['pull', 'reused'],
      ['data', 'reused'],
      ['eval-baseline', 'reused'],
      ['sft', 'resumed'],
      ['eval-sft', 'ran'],
      ['rl', 'ran'],
      ['eval-rl', 'ran'],
    ]);
    expect(second).toContainEqual(
      expect.objectContaining({ type: 'stage-start', stage: 'sft', resumed: true }),
    );
    expect(second.some((event) => event.type === 'sft-event' && event.event.type === 'resumed')).toBe(true);
    const sftSteps = second.flatMap((event) =>
      event.type === 'sft-event' && event.event.type === 'train-step' ? [event.event.step] : [],
    );
    expect(sftSteps).toEqual([3, 4]);
    expect(second.some((event) => event.type === 'rl-event' && event.event.type === 'rl-step')).toBe(true);
    for (const stage of result.stages.filter((entry) => entry.status !== 'reused')) {
      expect(stage.wallMs).toBeGreaterThan(0);
      expect(stage.recordedWallMs).toBe(stage.wallMs);
    }

    // Three models on the same three problems, and each stage's effect from their grades.
    expect(result.evaluations.map(({ model, summary }) => [model, summary.trajectories])).toEqual([
      ['baseline', 3],
      ['sft', 3],
      ['rl', 3],
    ]);
    expect(result.evaluations.map(({ modelDir }) => modelDir)).toEqual([
      pulledModelFolder('smollm2-135m-instruct', root),
      join(options.outDir, 'train', 'sft', 'model'),
      join(options.outDir, 'train', 'rl', 'model'),
    ]);
    const right = {
      baseline: await rightIds(join(options.outDir, 'eval', 'baseline')),
      sft: await rightIds(join(options.outDir, 'eval', 'sft')),
      rl: await rightIds(join(options.outDir, 'eval', 'rl')),
    };
    expect(result.effects.map(({ before, after }) => [before, after])).toEqual([
      ['baseline', 'sft'],
      ['sft', 'rl'],
      ['baseline', 'rl'],
    ]);
    for (const { before, after, effect, sentence } of result.effects) {
      expect(effect).toMatchObject({
        problems: 3,
        gained: [...right[after]].filter((id) => !right[before].has(id)).length,
        lost: [...right[before]].filter((id) => !right[after].has(id)).length,
      });
      expect(sentence).toMatch(/ points \(95% interval .* of 3; McNemar p = /);
    }
    const page = readFileSync(result.reportPath, 'utf8');
    expect(page).toContain('Tool SFT against the base model:');
    expect(page).toContain('Agentic RL from the SFT model');
    const saved = JSON.parse(readFileSync(result.resultPath, 'utf8')) as {
      stages: { stage: string; wallMs: number }[];
      evaluations: { model: string; accuracy: number }[];
    };
    expect(saved.stages.map((stage) => stage.stage)).toEqual(result.stages.map((stage) => stage.stage));
    expect(saved.evaluations.map((evaluation) => evaluation.model)).toEqual(['baseline', 'sft', 'rl']);
    // Every record file the stages wrote, as the schemas promise them.
    expectRecordFile(options.outDir, 'quickstart/quickstart.json');
    for (const model of ['baseline', 'sft', 'rl']) {
      expectRecordFiles(join(options.outDir, 'eval', model), [
        'quickstart-eval/config.json',
        'eval/trajectories.jsonl',
        'eval/summary.json',
      ]);
    }
    expectRecordFiles(join(options.outDir, 'train', 'sft'), [
      'sft-model/config.json',
      'sft-model/metrics.jsonl',
    ]);
    expectRecordFiles(join(options.outDir, 'train', 'rl'), ['rl/config.json', 'rl/metrics.jsonl']);

    // 3. Once more: every stage reused, nothing trained or evaluated, the same figures.
    const third: ModelQuickstartEvent[] = [];
    const again = await runModelQuickstart({ ...options, onEvent: (event) => third.push(event) });
    expect(again.stages.every((stage) => stage.status === 'reused')).toBe(true);
    expect(again.stages.find((stage) => stage.stage === 'sft')?.recordedWallMs).toBe(
      result.stages.find((stage) => stage.stage === 'sft')?.wallMs,
    );
    expect(
      third.some((event) => ['sft-event', 'rl-event', 'eval-progress', 'stage-start'].includes(event.type)),
    ).toBe(false);
    expect(again.effects).toEqual(result.effects);
    expect(existsSync(join(options.outDir, 'train', 'rl', 'model', 'config.json'))).toBe(true);
  }, 600_000); // three trainer starts, four engine starts, three evaluations: minutes on a loaded machine

  it('refuses an unknown model name with exit 2, naming the models it knows', async () => {
    const result = await startCli(['quickstart', '--model', 'smollm3-3b'], { cwd: root }).done;
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      '--model smollm3-3b: not a model the quickstart knows (smollm2-135m-instruct)',
    );
    expect(existsSync(join(root, 'runs', 'quickstart-smollm3-3b'))).toBe(false);
  });
});
