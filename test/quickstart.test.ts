/**
 * The quickstart end to end on the `test` preset: both models trained from scratch (a few
 * steps), one RL step from the tool model, all three served by their workers, evaluated on
 * arith problems through the agent loop and the jailed sandbox, one report with the table and
 * the RL curves written; a second run reuses the trained models and the RL run.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRunTrajectories } from '../src/eval/run-folder.ts';
import { type QuickstartEvent, runQuickstart } from '../src/quickstart/quickstart.ts';

const root = mkdtempSync(join(tmpdir(), 'agentmath-quickstart-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const sftConfig = {
  model: 'test',
  steps: 4,
  batchSize: 4,
  warmupSteps: 1,
  trainProblems: 24,
  checkpointEvery: 2,
  levels: [1],
};
const rlConfig = { steps: 1, batchSize: 1, groupSize: 2, levels: [1], problemPool: 2, evalProblems: 2 };

describe('quickstart', () => {
  it('trains both models, evaluates them side by side, writes the report, then reuses the models', async () => {
    const events: QuickstartEvent[] = [];
    const first = await runQuickstart({
      root,
      outDir: join(root, 'runs'),
      benchmarkCount: 6,
      concurrency: 3,
      sftConfig,
      rlConfig,
      onEvent: (event) => events.push(event),
    });
    expect(first.models.map((model) => [model.style, model.trainedNow])).toEqual([
      ['tool', true],
      ['text', true],
      ['tool-rl', true],
    ]);
    expect(events.some((event) => event.type === 'rl-event' && event.event.type === 'rl-step')).toBe(true);
    const page = readFileSync(first.reportPath, 'utf8');
    expect(page).toContain('Agentic RL from the tool model');
    expect(page).toContain('Code frequency (share of trajectories with a code call)');
    for (const model of first.models) {
      expect(existsSync(join(model.modelDir, 'config.json'))).toBe(true);
      expect(model.training.training.steps).toBe(4);
      expect(model.summary.trajectories).toBe(6);
      const trajectories = await readRunTrajectories(model.runDir);
      expect(new Set(trajectories.map((trajectory) => trajectory.problemId)).size).toBe(6);
      // Every level present in the benchmark slice is reported, with counts adding up.
      expect(model.levels.reduce((total, level) => total + level.problems, 0)).toBe(6);
    }
    expect(existsSync(first.reportPath)).toBe(true);
    // RL's effect is read against the tool model on the same problems, from the two runs' grades.
    const correctIds = async (style: string) => {
      const runDir = first.models.find((model) => model.style === style)?.runDir as string;
      return new Set(
        (await readRunTrajectories(runDir)).filter((t) => t.meta?.correct === true).map((t) => t.problemId),
      );
    };
    const toolRight = await correctIds('tool');
    const rlRight = await correctIds('tool-rl');
    expect(first.rlEffect).toMatchObject({
      problems: 6,
      gained: [...rlRight].filter((id) => !toolRight.has(id)).length,
      lost: [...toolRight].filter((id) => !rlRight.has(id)).length,
    });
    expect(page).toContain('RL against the tool model it started from:');
    expect(events.some((event) => event.type === 'sft-event' && event.event.type === 'train-step')).toBe(
      true,
    );

    const again: QuickstartEvent[] = [];
    const second = await runQuickstart({
      root,
      outDir: join(root, 'runs'),
      benchmarkCount: 6,
      concurrency: 3,
      sftConfig,
      rlConfig,
      onEvent: (event) => again.push(event),
    });
    expect(second.models.every((model) => !model.trainedNow)).toBe(true);
    expect(again.filter((event) => event.type === 'model-cached')).toHaveLength(2);
    expect(again.filter((event) => event.type === 'rl-cached')).toHaveLength(1);
    expect(again.some((event) => event.type === 'rl-event')).toBe(false);
    expect(again.some((event) => event.type === 'sft-event')).toBe(false);
  }, 300_000); // three models trained and evaluated: a minute alone, several on a loaded machine
});
