/**
 * The files of an evaluation run folder: `config.json` (resolved configuration, saved at the
 * start), `trajectories.jsonl` (one graded trajectory per line, appended as each finishes) and
 * `summary.json` (metrics), and `errors.jsonl` for trajectories that infrastructure broke. Trajectory lines are read and written by `src/trajectory`.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RUN_LOCK_FILE } from '../shared/run-folder-lock.ts';
import { readTrajectories, type Trajectory } from '../trajectory/index.ts';
import { EvalRunFormatError } from './eval-errors.ts';

export const RUN_FILES = {
  config: 'config.json',
  trajectories: 'trajectories.jsonl',
  /** Trajectories that ended in an engine or sandbox error; redone on resume. */
  errors: 'errors.jsonl',
  summary: 'summary.json',
  report: 'report.html',
} as const;

/** Whether the folder exists and holds at least one entry (its writer's lock aside). */
export async function folderHasEntries(folder: string): Promise<boolean> {
  if (!existsSync(folder)) return false;
  return (await readdir(folder)).some((name) => name !== RUN_LOCK_FILE);
}

/**
 * The trajectories stored in a run folder, validated line by line (an error names the file,
 * line and field). A last line without its newline (a write cut by a kill) is skipped with a
 * warning; the run's writer removes it when the run is resumed.
 */
export async function readRunTrajectories(
  folder: string,
  { onWarning }: { onWarning?: (message: string) => void } = {},
): Promise<Trajectory[]> {
  const path = join(folder, RUN_FILES.trajectories);
  if (!existsSync(path)) return [];
  const trajectories: Trajectory[] = [];
  const options = { tolerateTruncatedLastLine: true, ...(onWarning === undefined ? {} : { onWarning }) };
  for await (const trajectory of readTrajectories(path, options)) trajectories.push(trajectory);
  return trajectories;
}

/** Writes a JSON file of the run folder, creating the folder. */
export async function writeRunJson(folder: string, name: string, value: unknown): Promise<void> {
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, name), `${JSON.stringify(value, null, 2)}\n`);
}

/** Reads a JSON file of the run folder, or null when it is absent. */
export async function readRunJson(folder: string, name: string): Promise<unknown> {
  const path = join(folder, name);
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new EvalRunFormatError(`${path}: not valid JSON`, { cause: error });
  }
}
