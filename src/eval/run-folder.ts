/**
 * The files of an evaluation run folder: `config.json` (resolved configuration, saved at the
 * start), `trajectories.jsonl` (one graded trajectory per line, appended as each finishes) and
 * `summary.json` (metrics). Reading tolerates a torn last line, which a killed run can leave.
 */
import { existsSync } from 'node:fs';
import { appendFile, mkdir, readdir, readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Trajectory, trajectorySchema } from '../trajectory/trajectory.ts';
import { EvalRunFormatError } from './eval-errors.ts';

export const RUN_FILES = {
  config: 'config.json',
  trajectories: 'trajectories.jsonl',
  summary: 'summary.json',
  report: 'report.html',
} as const;

/** Whether the folder exists and holds at least one entry. */
export async function folderHasEntries(folder: string): Promise<boolean> {
  if (!existsSync(folder)) return false;
  return (await readdir(folder)).length > 0;
}

/**
 * The trajectories stored in a run folder. A last line without its newline (a write cut by a
 * kill) is dropped from the file when `repairTornTail` is set, so that appends stay well formed;
 * any other malformed line is an error naming the file, line and field.
 */
export async function readRunTrajectories(
  folder: string,
  { repairTornTail = false }: { repairTornTail?: boolean } = {},
): Promise<Trajectory[]> {
  const path = join(folder, RUN_FILES.trajectories);
  if (!existsSync(path)) return [];
  let text = await readFile(path, 'utf8');
  if (text.length > 0 && !text.endsWith('\n')) {
    const keep = text.lastIndexOf('\n') + 1;
    if (repairTornTail) await truncate(path, Buffer.byteLength(text.slice(0, keep)));
    text = text.slice(0, keep);
  }
  const trajectories: Trajectory[] = [];
  text.split('\n').forEach((raw, index) => {
    if (raw.trim() === '') return;
    const where = `${path} line ${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new EvalRunFormatError(`${where}: not valid JSON`, { cause: error });
    }
    const parsed = trajectorySchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.path.join('.') || '(record)';
      throw new EvalRunFormatError(`${where}: field "${field}": ${issue?.message ?? 'invalid'}`);
    }
    trajectories.push(parsed.data);
  });
  return trajectories;
}

/** Appends one trajectory as a line; one write call, so a kill tears at most the last line. */
export async function appendRunTrajectory(folder: string, trajectory: Trajectory): Promise<void> {
  await appendFile(join(folder, RUN_FILES.trajectories), `${JSON.stringify(trajectory)}\n`);
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
