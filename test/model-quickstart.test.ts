/**
 * `quickstart --model` end to end through the real stages, on a tiny random Qwen3 from
 * `model init` standing in for the pulled model (placed where `model pull` caches
 * smollm2-135m-instruct under a temporary project root, so the name goes through the pull's
 * own cache path): the baseline evaluated by its engine, tool SFT (its data written with code
 * run in the jail) on the trainer stopped by the signal after step 2, then a second quickstart
 * that reuses the baseline, resumes SFT from its checkpoint, evaluates the SFT model, runs RL
 * from it and evaluates that, and the SFT and RL models on the held-out level-5 split; a third
 * reuses every stage. The same pipeline as the embedded
 * quickstart, on the pretrained plan. And the command line: an unknown model name is exit 2
 * naming the known ones. Assertions are on records and results, never on time.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRunTrajectories } from '../src/eval/run-folder.ts';
import { IMPORT_MARKER_FILE, initHfModel, pulledModelFolder } from '../src/model/index.ts';
import {
  pretrainedPlan,
  type QuickstartEvent,
  type QuickstartPlan,
  runQuickstart,
} from '../src/quickstart/index.ts';
import { arithEvalProblems } from '../src/tasks/index.ts';
import { startCli } from './cli-process.ts';
import { expectRecordFile, expectRecordFiles } from './record-checks.ts';

let root: string;
let outDir: string;
let plan: QuickstartPlan;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'agentmath-model-quickstart-'));
  const cached = pulledModelFolder('smollm2-135m-instruct', root);
  await mkdir(dirname(cached), { recursive: true });
  await initHfModel({ arch: 'qwen3', out: cached, hidden: 64, seed: 1 });
  // What a finished import leaves: the marker `model pull` reads its cache by.
  await writeFile(join(cached, IMPORT_MARKER_FILE), JSON.stringify({ dtype: 'float32' }));
  outDir = join(root, 'runs', 'quickstart-smollm2-135m-instruct');
  const base = pretrainedPlan({ type: 'pullable', name: 'smollm2-135m-instruct' }, outDir, {
    count: 3,
    concurrency: 3,
    trainMinutes: 10,
    rlMinutes: 0.05,
  });
  plan = {
    ...base,
    evaluation: { ...base.evaluation, maxTokens: 256 },
    sft: {
      ...base.sft,
      trainProblems: 16,
      steps: 4,
      batchSize: 4,
      learningRate: 1e-3,
      warmupSteps: 1,
      checkpointEvery: 4,
    },
    rl:
      base.rl === null
        ? null
        : {
            ...base.rl,
            config: { ...base.rl.config, batchSize: 1, groupSize: 2, problemPool: 4, temperature: 0.8 },
          },
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
    const first: QuickstartEvent[] = [];
    await expect(
      runQuickstart({
        plan,
        root,
        outDir,
        signal: stop.signal,
        onEvent: (event) => {
          first.push(event);
          if (event.type === 'sft-event' && event.event.type === 'train-step' && event.event.step === 2) {
            stop.abort(new Error('stopped by the test'));
          }
        },
      }),
    ).rejects.toThrow('stopped by the test');
    expect(first[0]).toMatchObject({ type: 'stage', stage: 'pull', status: 'start' });
    expect(first.filter((event) => event.type === 'eval-finish').map((event) => event.evaluation)).toEqual([
      'baseline',
    ]);
    expect(first.some((event) => event.type === 'sft-event' && event.event.type === 'checkpoint-saved')).toBe(
      true,
    );

    // 2. Again: the baseline reused, SFT resumed after step 2, then the rest.
    const second: QuickstartEvent[] = [];
    const result = await runQuickstart({ plan, root, outDir, onEvent: (event) => second.push(event) });
    expect(result.stages.map(({ stage, status }) => [stage, status])).toEqual([
      ['pull', 'reused'],
      ['eval-baseline', 'reused'],
      ['sft', 'resumed'],
      ['eval-sft', 'ran'],
      ['rl', 'ran'],
      ['eval-rl', 'ran'],
      ['eval-sft@rl-split', 'ran'],
      ['eval-rl@rl-split', 'ran'],
    ]);
    expect(second).toContainEqual(expect.objectContaining({ type: 'stage', stage: 'sft', status: 'resume' }));
    expect(second.some((event) => event.type === 'sft-event' && event.event.type === 'resumed')).toBe(true);
    const sftSteps = second.flatMap((event) =>
      event.type === 'sft-event' && event.event.type === 'train-step' ? [event.event.step] : [],
    );
    expect(sftSteps).toEqual([3, 4]);
    expect(second.some((event) => event.type === 'rl-event' && event.event.type === 'rl-step')).toBe(true);

    // Three models on the same three problems, and each stage's effect from their grades.
    expect(result.evaluations.map(({ model, summary }) => [model, summary.trajectories])).toEqual([
      ['baseline', 3],
      ['sft', 3],
      ['rl', 3],
    ]);
    expect(result.evaluations.map(({ modelDir }) => modelDir)).toEqual([
      pulledModelFolder('smollm2-135m-instruct', root),
      join(outDir, 'train', 'arith-tool', 'model'),
      join(outDir, 'train', 'arith-tool-rl', 'model'),
    ]);
    // The tool SFT and RL models on the RL problems' held-out split too: level 5, never trained on.
    expect(result.rlSplit.map(({ name, summary }) => [name, summary.trajectories])).toEqual([
      ['sft@rl-split', 3],
      ['rl@rl-split', 3],
    ]);
    const splitTrajectories = await readRunTrajectories(join(outDir, 'eval', 'sft-rl-split'));
    expect(splitTrajectories.map((t) => t.problemId).sort()).toEqual(
      arithEvalProblems({ count: 3, levels: [5] })
        .map((problem) => problem.id)
        .sort(),
    );
    const right = {
      baseline: await rightIds(join(outDir, 'eval', 'baseline')),
      sft: await rightIds(join(outDir, 'eval', 'sft')),
      rl: await rightIds(join(outDir, 'eval', 'rl')),
      'sft@rl-split': await rightIds(join(outDir, 'eval', 'sft-rl-split')),
      'rl@rl-split': await rightIds(join(outDir, 'eval', 'rl-rl-split')),
    } as Record<string, Set<string | null>>;
    expect(result.effects.map(({ before, after, on }) => [before, after, on])).toEqual([
      ['baseline', 'sft', 'held-out'],
      ['sft', 'rl', 'rl-split'],
      ['sft', 'rl', 'held-out'],
      ['baseline', 'rl', 'held-out'],
    ]);
    for (const { before, after, on, effect, sentence } of result.effects) {
      const key = (model: string) => (on === 'rl-split' ? `${model}@rl-split` : model);
      const [was, now] = [right[key(before)] ?? new Set(), right[key(after)] ?? new Set()];
      expect(effect).toMatchObject({
        problems: 3,
        gained: [...now].filter((id) => !was.has(id)).length,
        lost: [...was].filter((id) => !now.has(id)).length,
      });
      expect(sentence).toMatch(/ points \(95% interval .* of 3; McNemar p = /);
    }
    const page = readFileSync(result.reportPath, 'utf8');
    expect(page).toContain('Tool SFT against the base model:');
    expect(page).toContain('Agentic RL from the tool model');
    // Every record file the stages wrote, as the schemas promise them.
    expectRecordFile(outDir, 'quickstart/quickstart.json');
    for (const model of ['baseline', 'sft', 'rl', 'sft-rl-split', 'rl-rl-split']) {
      expectRecordFiles(join(outDir, 'eval', model), [
        'quickstart-eval/config.json',
        'eval/trajectories.jsonl',
        'eval/summary.json',
      ]);
    }
    expectRecordFiles(join(outDir, 'train', 'arith-tool'), ['sft/config.json', 'sft/metrics.jsonl']);
    expectRecordFiles(join(outDir, 'train', 'arith-tool-rl'), ['rl/config.json', 'rl/metrics.jsonl']);

    // 3. Once more: every stage reused, nothing trained or evaluated, the same figures.
    const third: QuickstartEvent[] = [];
    const again = await runQuickstart({ plan, root, outDir, onEvent: (event) => third.push(event) });
    expect(again.stages.every((stage) => stage.status === 'reused')).toBe(true);
    expect(third.some((event) => ['sft-event', 'rl-event', 'eval-progress'].includes(event.type))).toBe(
      false,
    );
    expect(again.effects).toEqual(result.effects);
    expect(existsSync(join(outDir, 'train', 'arith-tool-rl', 'model', 'config.json'))).toBe(true);
  }, 600_000); // three trainer starts, six engine starts, five evaluations: minutes on a loaded machine

  it('refuses an unknown model name with exit 2, naming the models it knows', async () => {
    const result = await startCli(['quickstart', '--model', 'smollm3-3b'], { cwd: root }).done;
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      '--model smollm3-3b: not a model the quickstart knows (smollm2-135m-instruct)',
    );
    expect(existsSync(join(root, 'runs', 'quickstart-smollm3-3b'))).toBe(false);
  });
});
