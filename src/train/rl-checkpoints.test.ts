import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  checkpointPath,
  checkpointsToDelete,
  keepRolloutCopy,
  pruneCheckpoints,
  resumeStep,
  rewindToCheckpoint,
  savedSteps,
  savesCheckpointAfter,
} from './rl-checkpoints.ts';

const root = mkdtempSync(join(tmpdir(), 'agentmath-rl-checkpoints-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const rolloutCheckpoint = (nextStep: number) =>
  JSON.stringify({ nextStep, stage: 0, problemsTaken: nextStep * 2, parked: [] });

describe('train rl checkpoints', () => {
  it('are saved every K steps and after the last', () => {
    const saved = [0, 1, 2, 3, 4, 5, 6].filter((step) => savesCheckpointAfter(step, { every: 3, steps: 7 }));
    expect(saved).toEqual([2, 5, 6]); // checkpoints step-3, step-6, step-7
  });

  it('a resume takes the newest checkpoint at or before the committed step that has the rollout with it', () => {
    const saved = [
      { step: 0, hasRolloutCopy: false },
      { step: 3, hasRolloutCopy: true },
      { step: 6, hasRolloutCopy: false }, // saved after step 5, killed before step 5 committed
    ];
    expect(resumeStep(5, saved)).toBe(3);
    expect(resumeStep(6, saved)).toBe(6);
    expect(resumeStep(2, saved)).toBe(0);
    expect(resumeStep(5, [{ step: 3, hasRolloutCopy: false }])).toBeNull();
  });

  it('keeps the newest N', () => {
    expect(checkpointsToDelete([0, 3, 6, 9], 2)).toEqual([3, 0]);
    expect(checkpointsToDelete([4], 2)).toEqual([]);
  });

  it('--checkpoint-every 3 killed after step 4: the rollout is rewound to step 3 from its copy', async () => {
    const run = join(root, 'run');
    mkdirSync(run);
    const commit = (nextStep: number) =>
      writeFileSync(join(run, 'checkpoint.json'), rolloutCheckpoint(nextStep));
    // As runRl does it: step-0 at the start; before each step, copy the committed rollout into
    // the checkpoint of that step if there is one; step-3 saved after step 2.
    mkdirSync(checkpointPath(run, 0), { recursive: true });
    for (let step = 0; step <= 4; step++) {
      await keepRolloutCopy(run, step);
      if (savesCheckpointAfter(step, { every: 3, steps: 6 })) mkdirSync(checkpointPath(run, step + 1));
      commit(step + 1);
    }
    expect(await savedSteps(run)).toEqual([
      { step: 0, hasRolloutCopy: false },
      { step: 3, hasRolloutCopy: true },
    ]);
    expect(await rewindToCheckpoint(run, 5)).toBe(3);
    expect(JSON.parse(readFileSync(join(run, 'checkpoint.json'), 'utf8')).nextStep).toBe(3);
    // Rewound to step 0: the rollout starts afresh (no checkpoint.json).
    expect(await rewindToCheckpoint(run, 2)).toBe(0);
    expect(existsSync(join(run, 'checkpoint.json'))).toBe(false);
  });

  it('prunes only the step folders it names', async () => {
    const run = join(root, 'prune');
    for (const step of [0, 3, 6]) mkdirSync(checkpointPath(run, step), { recursive: true });
    mkdirSync(join(run, 'checkpoints', 'mine'), { recursive: true });
    writeFileSync(join(run, 'checkpoints', 'step-7.txt'), 'a user file');
    await pruneCheckpoints(run, 2);
    expect(existsSync(checkpointPath(run, 0))).toBe(false);
    expect(existsSync(checkpointPath(run, 3))).toBe(true);
    expect(existsSync(checkpointPath(run, 6))).toBe(true);
    expect(existsSync(join(run, 'checkpoints', 'mine'))).toBe(true);
    expect(existsSync(join(run, 'checkpoints', 'step-7.txt'))).toBe(true);
  });
});
