/**
 * The record of one quickstart stage: `stages/<stage>.json` under the quickstart's folder, kept
 * beside the stage's own folder (a training run folder must hold only the run's files). It is
 * written when the stage starts, with the inputs the stage was made from (the settings and the
 * finish times of the stages it builds on), and again when it finishes, with its finish time
 * and wall time. A later quickstart reads it to decide: the same inputs and finished → reuse;
 * the same inputs and not finished → resume; anything else → start afresh.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

export type StageRecord = {
  stage: string;
  /** What the stage was made from; a different value means its output is another one's. */
  inputs: Record<string, unknown>;
  startedAt: string;
  /** null while it runs, or after it was interrupted. */
  finishedAt: string | null;
  /** Wall time of the session that finished it. */
  wallMs: number | null;
};

export type StageState =
  | { status: 'finished'; record: StageRecord & { finishedAt: string; wallMs: number } }
  | { status: 'interrupted'; record: StageRecord }
  | { status: 'new' };

/** The record's path under the quickstart folder `outDir`. */
export function stageRecordPath(outDir: string, stage: string): string {
  return join(outDir, 'stages', `${stage}.json`);
}

/** Where `stage` stands for these `inputs`; a record of other inputs, or an unreadable one, is `new`. */
export async function readStageState(
  outDir: string,
  stage: string,
  inputs: Record<string, unknown>,
): Promise<StageState> {
  const path = stageRecordPath(outDir, stage);
  if (!existsSync(path)) return { status: 'new' };
  let record: StageRecord;
  try {
    record = JSON.parse(await readFile(path, 'utf8')) as StageRecord;
  } catch {
    return { status: 'new' };
  }
  // Compared as JSON: the inputs were written as JSON.
  if (!isDeepStrictEqual(record.inputs, JSON.parse(JSON.stringify(inputs)))) return { status: 'new' };
  if (typeof record.finishedAt === 'string' && typeof record.wallMs === 'number') {
    return {
      status: 'finished',
      record: { ...record, finishedAt: record.finishedAt, wallMs: record.wallMs },
    };
  }
  return { status: 'interrupted', record };
}

/** Writes the record of a stage that starts now (or resumes), not finished. */
export async function recordStageStart(
  outDir: string,
  stage: string,
  inputs: Record<string, unknown>,
  now: Date,
): Promise<void> {
  await writeRecord(outDir, { stage, inputs, startedAt: now.toISOString(), finishedAt: null, wallMs: null });
}

/** Marks the stage finished; returns its finish time (the inputs of the stages built on it). */
export async function recordStageFinish(
  outDir: string,
  stage: string,
  inputs: Record<string, unknown>,
  { startedAt, now, wallMs }: { startedAt: Date; now: Date; wallMs: number },
): Promise<string> {
  const finishedAt = now.toISOString();
  await writeRecord(outDir, { stage, inputs, startedAt: startedAt.toISOString(), finishedAt, wallMs });
  return finishedAt;
}

async function writeRecord(outDir: string, record: StageRecord): Promise<void> {
  const path = stageRecordPath(outDir, record.stage);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(record, null, 2)}\n`);
}
