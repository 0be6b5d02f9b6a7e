import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fixtureTrajectory } from '../../test/eval-fixtures.ts';
import type { Trajectory } from '../trajectory/index.ts';
import { evalComparisonTable, readEvalRunFigures } from './eval-comparison.ts';

const root = await mkdtemp(join(tmpdir(), 'agentmath-eval-comparison-'));
afterAll(() => rm(root, { recursive: true, force: true }));

async function run(name: string, trajectories: Trajectory[]): Promise<string> {
  const folder = join(root, name);
  await mkdir(folder);
  await writeFile(
    join(folder, 'trajectories.jsonl'),
    trajectories.map((trajectory) => `${JSON.stringify(trajectory)}\n`).join(''),
  );
  return folder;
}

function graded(problemId: string, correct: boolean | null, { sample = 0, calls = 0 } = {}): Trajectory {
  const trajectory = fixtureTrajectory({
    problemId,
    sample,
    answer: correct === null ? null : '4',
    calls: Array.from({ length: calls }, () => 'ok' as const),
  });
  return {
    ...trajectory,
    meta: { reference: '4', correct, reason: correct === null ? 'grader-unavailable' : 'x', extracted: null },
  };
}

describe('eval runs side by side', () => {
  it('pairs the problems both runs graded, leaves outages and later samples out', async () => {
    const base = await run('base', [
      graded('a', false),
      graded('b', false),
      graded('c', true),
      graded('d', null),
      graded('a', true, { sample: 1 }),
    ]);
    const tuned = await run('tuned', [
      graded('a', true, { calls: 1 }),
      graded('b', true, { calls: 2 }),
      graded('c', false, { calls: 1 }),
      graded('d', true, { calls: 1 }),
      graded('e', true),
    ]);
    const figures = await Promise.all([readEvalRunFigures(base), readEvalRunFigures(tuned)]);
    expect(figures[0].graded).toBe(3);
    expect(figures[1].withCode).toBe(4);
    const table = evalComparisonTable(figures);
    expect(table).toContain('| base | 3 | 1 (33.3%) | 100.0% | 0.0% | 0.00 |');
    expect(table).toContain('| tuned | 5 | 4 (80.0%) | 100.0% | 80.0% | 1.00 |');
    // a, b gained; c lost; d (an outage in base) and e (not in base) are not paired.
    expect(table).toContain('- tuned − base: +33.3 points');
    expect(table).toContain('2 gained, 1 lost of 3');
  });

  it('says so when no problem was graded in both', async () => {
    const left = await run('left', [graded('a', true)]);
    const right = await run('right', [graded('b', true)]);
    const table = evalComparisonTable(
      await Promise.all([readEvalRunFigures(left), readEvalRunFigures(right)]),
    );
    expect(table).toContain('- right − left: no problem graded in both');
  });
});

describe('the interval of a paired difference', () => {
  it('stays within ±100 points', async () => {
    const ids = Array.from({ length: 12 }, (_, index) => `p${index}`);
    const before = await run(
      'all-wrong',
      ids.map((id) => graded(id, false)),
    );
    const after = await run(
      'almost-all-right',
      ids.map((id, index) => graded(id, index > 0)),
    );
    const table = evalComparisonTable(
      await Promise.all([readEvalRunFigures(before), readEvalRunFigures(after)]),
    );
    expect(table).toContain('+91.7 points (95% interval +52.9 to +100.0;');
  });
});
