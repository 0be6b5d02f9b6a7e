/**
 * The files of a rollout run folder, append-only: `trajectories.jsonl` (a trajectory each time
 * it finishes or parks; `meta.rolloutStep` says in which step; the last line of an id is its
 * current record), `groups.jsonl` (one line per decided group), `steps.jsonl` (one line per
 * step), and `checkpoint.json` (replaced atomically after each step: the next step, the stage,
 * problems taken, and the parked groups by trajectory id). `config.json` holds the defining
 * configuration. On resume, lines of steps at or after the checkpoint's next step (a step cut
 * by a kill) are removed, so that step is redone cleanly.
 */
import { existsSync } from 'node:fs';
import { appendFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { parseTrajectory, type Trajectory } from '../trajectory/index.ts';
import type { GroupRecord } from './group-record.ts';
import { PROBLEM_HISTORY_FILE, type ProblemHistoryLine } from './problem-history.ts';
import type { RolloutTrajectoryRecord } from './rollout-trajectory-record.ts';
import type { GroupOutcome, RolloutProblem, StepStats } from './types.ts';

export const ROLLOUT_FILES = {
  config: 'config.json',
  trajectories: 'trajectories.jsonl',
  groups: 'groups.jsonl',
  steps: 'steps.jsonl',
  checkpoint: 'checkpoint.json',
} as const;

export type { GroupRecord };

export function groupRecord(group: GroupOutcome): GroupRecord {
  return {
    step: group.step,
    problemId: group.problem.id,
    trajectoryIds: group.trajectories.map((trajectory) => trajectory.id),
    rewards: group.rewards,
    correct: group.correct,
    advantages: group.advantages,
    kept: group.kept,
    dropReason: group.dropReason,
    oldestPolicyVersion: group.oldestPolicyVersion,
    ...(group.abandoned === undefined || group.abandoned.length === 0
      ? {}
      : { abandonedIds: group.abandoned.map((trajectory) => trajectory.id) }),
    ...(group.resampled === undefined ? {} : { resampled: group.resampled }),
  };
}

/** What `checkpoint.json` holds. */
export type RolloutCheckpoint = {
  nextStep: number;
  stage: number;
  problemsTaken: number;
  /** `epoch`: the pass over the problem set the group was drawn in (absent in older runs). */
  parked: {
    problem: RolloutProblem;
    startedStep: number;
    epoch?: number;
    trajectoryIds: (string | null)[];
  }[];
};

export class RolloutRecordError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ROLLOUT_RECORD_INVALID', message, options);
  }
}

/** Appends lines in call order (one writer per file). */
export class RolloutRecords {
  readonly folder: string;
  #queue: Promise<void> = Promise.resolve();

  constructor(folder: string) {
    this.folder = folder;
  }

  appendTrajectory(trajectory: Trajectory, step: number): void {
    const record: RolloutTrajectoryRecord = {
      ...trajectory,
      meta: { ...trajectory.meta, rolloutStep: step },
    };
    this.#append(ROLLOUT_FILES.trajectories, record);
  }

  appendGroup(group: GroupOutcome): void {
    this.#append(ROLLOUT_FILES.groups, groupRecord(group));
  }

  appendHistory(line: ProblemHistoryLine): void {
    this.#append(PROBLEM_HISTORY_FILE, line);
  }

  appendStep(stats: StepStats): void {
    this.#append(ROLLOUT_FILES.steps, stats);
  }

  /** Waits for queued lines, then replaces the checkpoint atomically. */
  async commit(checkpoint: RolloutCheckpoint): Promise<void> {
    await this.flush();
    const path = join(this.folder, ROLLOUT_FILES.checkpoint);
    await writeFile(`${path}.tmp`, `${JSON.stringify(checkpoint)}\n`);
    await rename(`${path}.tmp`, path);
  }

  flush(): Promise<void> {
    return this.#queue;
  }

  #append(name: string, value: unknown): void {
    const line = `${JSON.stringify(value)}\n`;
    this.#queue = this.#queue.then(() => appendFile(join(this.folder, name), line));
  }
}

/** Reads the JSON lines of a run file; a torn last line (a kill mid-write) is dropped. */
export async function readRunLines(path: string): Promise<unknown[]> {
  if (!existsSync(path)) return [];
  const text = await readFile(path, 'utf8');
  const lines = text.split('\n');
  const values: unknown[] = [];
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    try {
      values.push(JSON.parse(line));
    } catch (error) {
      if (index === lines.length - 1) continue; // no newline: cut by a kill
      throw new RolloutRecordError(`${path} line ${index + 1}: not valid JSON`, { cause: error });
    }
  }
  return values;
}

/** The checkpoint, or null before the first step finished. */
export async function readCheckpoint(folder: string): Promise<RolloutCheckpoint | null> {
  const path = join(folder, ROLLOUT_FILES.checkpoint);
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(await readFile(path, 'utf8')) as RolloutCheckpoint;
  } catch (error) {
    throw new RolloutRecordError(`${path}: not valid JSON`, { cause: error });
  }
}

/**
 * Cuts every file back to the steps before `nextStep` (a half-finished step is redone) and
 * returns the current record of each trajectory kept, by id.
 */
export async function truncateToStep(folder: string, nextStep: number): Promise<Map<string, Trajectory>> {
  const stepOf = (value: unknown, read: (record: Record<string, unknown>) => unknown): number => {
    const step = read(value as Record<string, unknown>);
    return typeof step === 'number' ? step : Number.POSITIVE_INFINITY;
  };
  const trajectories = new Map<string, Trajectory>();
  const keptTrajectories: unknown[] = [];
  const path = join(folder, ROLLOUT_FILES.trajectories);
  for (const [index, value] of (await readRunLines(path)).entries()) {
    if (
      stepOf(value, (record) => (record.meta as Record<string, unknown> | undefined)?.rolloutStep) >= nextStep
    )
      continue;
    const trajectory = parseTrajectory(value, { file: path, line: index + 1 });
    trajectories.set(trajectory.id, trajectory);
    keptTrajectories.push(value);
  }
  await rewrite(path, keptTrajectories);
  for (const name of [ROLLOUT_FILES.groups, ROLLOUT_FILES.steps])
    await truncateStepFile(join(folder, name), nextStep);
  const history = join(folder, PROBLEM_HISTORY_FILE);
  if (existsSync(history)) await truncateStepFile(history, nextStep);
  return trajectories;
}

/** Keeps the lines of a JSONL file whose `step` field is below `nextStep` (other run files use it too). */
export async function truncateStepFile(path: string, nextStep: number): Promise<void> {
  const kept = (await readRunLines(path)).filter((value) => {
    const step = (value as Record<string, unknown>).step;
    return typeof step === 'number' && step < nextStep;
  });
  await rewrite(path, kept);
}

async function rewrite(path: string, values: unknown[]): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(`${path}.tmp`, values.map((value) => `${JSON.stringify(value)}\n`).join(''));
  await rename(`${path}.tmp`, path);
}
