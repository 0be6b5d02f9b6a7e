/**
 * The quickstart end to end on the embedded plan, made small: both arms trained from a new byte
 * model side by side (a few steps), one RL step from the tool model, every model served by its
 * own engine and evaluated through the agent loop and the jailed sandbox, the tool and RL models
 * also on the RL problems' held-out split; one report with the tables, each stage's effect and
 * the RL curves; `quickstart.json` as its schema says. A second run reuses every stage.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRunTrajectories } from '../src/eval/run-folder.ts';
import {
  embeddedPlan,
  type QuickstartEvent,
  type QuickstartPlan,
  runQuickstart,
} from '../src/quickstart/index.ts';
import { quickstartRecordSchema } from '../src/quickstart/quickstart-record.ts';
import { sftRunConfigSchema } from '../src/train/index.ts';

const root = mkdtempSync(join(tmpdir(), 'agentmath-quickstart-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const base = embeddedPlan(root, { count: 6, concurrency: 3 });
const plan: QuickstartPlan = {
  ...base,
  evaluation: { ...base.evaluation, maxTokens: 96 },
  sft: {
    steps: 4,
    batchSize: 4,
    warmupSteps: 1,
    trainProblems: 24,
    checkpointEvery: 2,
    levels: [1, 5],
    levelWeights: [2, 1],
    threads: 1,
    evalProblems: 0,
  },
  rl: {
    minutes: 10,
    config: {
      steps: 1,
      batchSize: 1,
      groupSize: 2,
      levels: [5],
      problemPool: 2,
      evalProblems: 2,
      evalEvery: 0,
      partialRollouts: 1,
      maxTokens: 96,
      reward: 'accuracy',
      trainThreads: 1,
    },
  },
  rlHeldOut: { levels: [5], count: 4 },
};

describe('quickstart (the embedded plan)', () => {
  it('trains both arms and RL, evaluates every model, writes the report and quickstart.json, then reuses every stage', async () => {
    const events: QuickstartEvent[] = [];
    const outDir = join(root, 'runs');
    const first = await runQuickstart({ plan, root, outDir, onEvent: (event) => events.push(event) });
    expect(first.evaluations.map((entry) => entry.model)).toEqual(['sft', 'sft-text', 'rl']);
    expect(first.rlSplit.map((entry) => [entry.name, entry.summary.problems])).toEqual([
      ['sft@rl-split', 4],
      ['rl@rl-split', 4],
    ]);
    expect(
      first.stages
        .filter((stage) => stage.status === 'ran')
        .map((stage) => stage.stage)
        .sort(),
    ).toEqual(
      [
        'eval-rl',
        'eval-rl@rl-split',
        'eval-sft',
        'eval-sft-text',
        'eval-sft@rl-split',
        'rl',
        'sft',
        'sft-text',
      ].sort(),
    );
    // Both arms are SFT runs of the one loop, from a new byte model each, in the project's cache.
    for (const arm of ['arith-tool', 'arith-text']) {
      const config = sftRunConfigSchema.parse(
        JSON.parse(readFileSync(join(root, '.agentmath', 'models', arm, 'config.json'), 'utf8')),
      );
      expect(config).toMatchObject({
        model: join(root, '.agentmath', 'models', arm, 'init-model'),
        style: arm === 'arith-tool' ? 'tool' : 'text',
        levels: [1, 5],
        levelWeights: [2, 1],
      });
    }
    expect(events.some((event) => event.type === 'sft-event' && event.event.type === 'train-step')).toBe(
      true,
    );
    expect(events.some((event) => event.type === 'rl-event' && event.event.type === 'rl-step')).toBe(true);
    for (const entry of [...first.evaluations, ...first.rlSplit]) {
      expect(existsSync(join(entry.modelDir, 'config.json'))).toBe(true);
      const trajectories = await readRunTrajectories(entry.runDir);
      expect(new Set(trajectories.map((trajectory) => trajectory.problemId)).size).toBe(
        entry.summary.problems,
      );
      expect(entry.levels.reduce((total, level) => total + level.problems, 0)).toBe(entry.summary.problems);
    }
    // RL's effect is read against the tool model on the same problems, from the two runs' grades.
    const rightIds = async (runDir: string) =>
      new Set(
        (await readRunTrajectories(runDir)).filter((t) => t.meta?.correct === true).map((t) => t.problemId),
      );
    const [sftRight, rlRight] = await Promise.all(first.rlSplit.map((entry) => rightIds(entry.runDir)));
    const split = first.effects.find((effect) => effect.on === 'rl-split');
    expect(split?.effect).toMatchObject({
      problems: 4,
      gained: [...(rlRight ?? [])].filter((id) => !sftRight?.has(id)).length,
      lost: [...(sftRight ?? [])].filter((id) => !rlRight?.has(id)).length,
    });
    const page = readFileSync(first.reportPath, 'utf8');
    expect(page).toContain('Agentic RL from the tool model');
    expect(page).toContain('RL against the tool model it started from on 4 held-out level 5 problems');
    const record = quickstartRecordSchema.parse(JSON.parse(readFileSync(first.resultPath, 'utf8')));
    expect(record.settings).toMatchObject({ count: 6, levels: [1, 5], levelWeights: [2, 1], rlLevels: [5] });

    const again: QuickstartEvent[] = [];
    const second = await runQuickstart({ plan, root, outDir, onEvent: (event) => again.push(event) });
    expect(second.stages.every((stage) => stage.status === 'reused')).toBe(true);
    expect(again.some((event) => event.type === 'rl-event' || event.type === 'sft-event')).toBe(false);
    expect(second.evaluations.map((entry) => entry.summary.avgAtK)).toEqual(
      first.evaluations.map((entry) => entry.summary.avgAtK),
    );

    // An RL run left unfinished (its checkpoint saved, not its end) by another configuration is
    // not resumed with this one — train rl would refuse the changed options — but run again.
    const rlFolder = join(root, '.agentmath', 'models', 'arith-tool-rl');
    expect(existsSync(join(rlFolder, 'checkpoint.json'))).toBe(true);
    rmSync(join(rlFolder, 'quickstart-rl.json'));
    const changed: QuickstartPlan = {
      ...plan,
      rl: {
        ...(plan.rl as NonNullable<QuickstartPlan['rl']>),
        config: { ...plan.rl?.config, temperature: 0.7 },
      },
    };
    const third = await runQuickstart({ plan: changed, root, outDir });
    expect(third.stages.find((stage) => stage.stage === 'rl')?.status).toBe('ran');
  }, 600_000); // three models trained, five evaluations: minutes on a loaded machine
});
