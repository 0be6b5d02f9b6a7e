/**
 * Where `train rl` keeps the trainer's checkpoints and how a resume picks one: a checkpoint
 * `checkpoints/step-N` holds the trainer as it was before step N, written every
 * `--checkpoint-every K` steps (and after the last), beside a copy of the rollout's
 * `checkpoint.json` as it was then (`rollout-checkpoint.json`, written before step N commits).
 * A resume takes the newest checkpoint at or before the rollout's next step, puts that copy back
 * (so the rollout's own resume cuts every record from step N on) and redoes the steps since:
 * each is recorded once. Only the newest `--keep-checkpoints N` of the folders this module
 * names (`step-` and five digits) are kept; nothing else in the folder is touched.
 */
import { existsSync } from 'node:fs';
import { copyFile, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ROLLOUT_FILES } from '../rollout/index.ts';
import { RL_FILES } from './rl-records.ts';

const ROLLOUT_COPY = 'rollout-checkpoint.json';
const STEP_FOLDER = /^step-(\d{5})$/;

export function checkpointPath(folder: string, step: number): string {
  return join(folder, RL_FILES.checkpoints, `step-${String(step).padStart(5, '0')}`);
}

/** Whether the trainer's state before step `step + 1` is saved after step `step`. */
export function savesCheckpointAfter(
  step: number,
  { every, steps }: { every: number; steps: number },
): boolean {
  return (step + 1) % every === 0 || step + 1 === steps;
}

/**
 * The step a resume restarts at: the newest saved step ≤ `committedNext` that is `committedNext`
 * itself or has the rollout's copy (step 0 needs none: the rollout starts afresh). Pure.
 */
export function resumeStep(
  committedNext: number,
  saved: readonly { step: number; hasRolloutCopy: boolean }[],
): number | null {
  const usable = saved
    .filter(
      ({ step, hasRolloutCopy }) =>
        step === committedNext || (step < committedNext && (hasRolloutCopy || step === 0)),
    )
    .map(({ step }) => step);
  return usable.length === 0 ? null : Math.max(...usable);
}

/** The step folders to delete so that the newest `keep` remain. Pure. */
export function checkpointsToDelete(steps: readonly number[], keep: number): number[] {
  return [...steps].sort((a, b) => b - a).slice(keep);
}

/** Steps with a checkpoint folder in the run (ours only: `step-NNNNN`), ascending. */
export async function savedSteps(folder: string): Promise<{ step: number; hasRolloutCopy: boolean }[]> {
  const root = join(folder, RL_FILES.checkpoints);
  if (!existsSync(root)) return [];
  const found: { step: number; hasRolloutCopy: boolean }[] = [];
  for (const name of await readdir(root)) {
    const match = STEP_FOLDER.exec(name);
    if (match === null) continue;
    const step = Number(match[1]);
    found.push({ step, hasRolloutCopy: existsSync(join(root, name, ROLLOUT_COPY)) });
  }
  return found.sort((a, b) => a.step - b.step);
}

/** Copies the rollout's committed `checkpoint.json` into the checkpoint of `step`, if saved. */
export async function keepRolloutCopy(folder: string, step: number): Promise<void> {
  const target = checkpointPath(folder, step);
  const source = join(folder, ROLLOUT_FILES.checkpoint);
  if (!existsSync(target) || !existsSync(source)) return;
  const temporary = join(target, `${ROLLOUT_COPY}.tmp`);
  await copyFile(source, temporary);
  await rename(temporary, join(target, ROLLOUT_COPY));
}

/**
 * Rewinds the rollout to the newest usable checkpoint at or before `committedNext` and returns
 * its step (the rollout's `checkpoint.json` replaced by the copy; removed for step 0).
 */
export async function rewindToCheckpoint(folder: string, committedNext: number): Promise<number> {
  const step = resumeStep(committedNext, await savedSteps(folder)) ?? committedNext;
  if (step === committedNext) return step;
  const rollout = join(folder, ROLLOUT_FILES.checkpoint);
  const copy = join(checkpointPath(folder, step), ROLLOUT_COPY);
  if (existsSync(copy)) {
    await copyFile(copy, `${rollout}.tmp`);
    await rename(`${rollout}.tmp`, rollout);
  } else {
    await rm(rollout, { force: true });
  }
  return step;
}

/** Deletes all but the newest `keep` checkpoints this module named. */
export async function pruneCheckpoints(folder: string, keep: number): Promise<void> {
  const steps = (await savedSteps(folder)).map(({ step }) => step);
  for (const step of checkpointsToDelete(steps, keep)) {
    await rm(checkpointPath(folder, step), { recursive: true, force: true });
  }
}
