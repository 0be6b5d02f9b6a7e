/**
 * Trajectory JSONL files: one record per line, appended as trajectories finish. The reader
 * streams (constant memory in the file's size) and validates every line; the writer appends
 * one line per call with a single write and syncs it to disk, so a killed process loses at
 * most the line it was writing. Such a cut-off last line is skipped with a warning by a
 * tolerant reader, and removed (with a warning) when a writer reopens the file.
 */

import { type FileHandle, open } from 'node:fs/promises';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { readTextChunks } from '../shared/text-input.ts';
import { type Trajectory, trajectorySchema } from './trajectory.ts';
import { InvalidTrajectoryError, type RecordLocation } from './trajectory-file-error.ts';

export type ReadTrajectoriesOptions = {
  /** Skip a last line that has no newline and does not parse (a crash mid-write). */
  tolerateTruncatedLastLine?: boolean;
  /** Receives warnings (a skipped truncated line); by default `process.emitWarning`. */
  onWarning?: (message: string) => void;
};

/** A valid record and the line it came from (1-based). */
export type TrajectoryLine = { trajectory: Trajectory; line: number };

/** Validates one parsed record; throws `InvalidTrajectoryError` naming `location` and the field. */
export function parseTrajectory(value: unknown, location: RecordLocation = {}): Trajectory {
  const result = trajectorySchema.safeParse(value);
  if (!result.success) throw InvalidTrajectoryError.fromZod(location, result.error);
  return result.data;
}

/** Parses one JSONL line; throws `InvalidTrajectoryError` for bad JSON or a bad record. */
export function parseTrajectoryLine(text: string, location: RecordLocation = {}): Trajectory {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new InvalidTrajectoryError(location, null, `not valid JSON (${reason})`, { cause: error });
  }
  return parseTrajectory(value, location);
}

/** The trajectories in a JSONL file with their line numbers, read as a stream. Blank lines are skipped. */
export async function* readTrajectoryLines(
  file: string,
  options: ReadTrajectoriesOptions = {},
): AsyncGenerator<TrajectoryLine> {
  const { tolerateTruncatedLastLine = false, onWarning = defaultWarning } = options;
  for await (const { text, line, terminated } of readLines(file)) {
    if (text.trim() === '') continue;
    try {
      yield { trajectory: parseTrajectoryLine(text, { file, line }), line };
    } catch (error) {
      if (!(tolerateTruncatedLastLine && !terminated && error instanceof InvalidTrajectoryError)) throw error;
      onWarning(
        `${file} line ${line}: skipped a truncated last line (${text.length} characters, no newline)`,
      );
    }
  }
}

/** The trajectories in a JSONL file, read as a stream. */
export async function* readTrajectories(
  file: string,
  options: ReadTrajectoriesOptions = {},
): AsyncGenerator<Trajectory> {
  for await (const { trajectory } of readTrajectoryLines(file, options)) yield trajectory;
}

/** Lines of a UTF-8 file (`-`: standard input; a BOM dropped); `terminated` is false only for a last line without a newline. */
async function* readLines(file: string): AsyncGenerator<{ text: string; line: number; terminated: boolean }> {
  let pending = '';
  let line = 0;
  for await (const chunk of readTextChunks(file, 'trajectory file')) {
    let start = 0;
    let newline = chunk.indexOf('\n');
    while (newline !== -1) {
      line++;
      yield { text: stripCarriageReturn(pending + chunk.slice(start, newline)), line, terminated: true };
      pending = '';
      start = newline + 1;
      newline = chunk.indexOf('\n', start);
    }
    pending += chunk.slice(start);
  }
  if (pending !== '') yield { text: pending, line: line + 1, terminated: false };
}

function stripCarriageReturn(text: string): string {
  return text.endsWith('\r') ? text.slice(0, -1) : text;
}

function defaultWarning(message: string): void {
  process.emitWarning(message, { code: 'AGENTMATH_TRUNCATED_LINE' });
}

export type TrajectoryWriterOptions = {
  /** Sync each line to disk before `append` resolves (default true). */
  sync?: boolean;
  /** Receives warnings (a removed truncated line); by default `process.emitWarning`. */
  onWarning?: (message: string) => void;
};

/** Appends trajectories to a JSONL file, one validated line per call, in call order. */
export type TrajectoryWriter = {
  readonly file: string;
  append(trajectory: Trajectory): Promise<void>;
  close(): Promise<void>;
};

/**
 * Opens `file` for appending (creating it). A last line cut off by an earlier crash is
 * removed first, so that the next record starts on a line of its own.
 */
export async function openTrajectoryWriter(
  file: string,
  options: TrajectoryWriterOptions = {},
): Promise<TrajectoryWriter> {
  const { sync = true, onWarning = defaultWarning } = options;
  const handle = await open(file, 'a+');
  try {
    const removed = await removePartialLastLine(handle);
    if (removed > 0) onWarning(`${file}: removed a truncated last line (${removed} bytes, no newline)`);
  } catch (error) {
    await handle.close();
    throw error;
  }
  let queue: Promise<void> = Promise.resolve();
  let closed = false;
  const write = async (trajectory: Trajectory) => {
    const line = `${JSON.stringify(parseTrajectory(trajectory, { file }))}\n`;
    await handle.write(line);
    if (sync) await handle.datasync();
  };
  return {
    file,
    append(trajectory) {
      if (closed)
        return Promise.reject(new AgentMathError('TRAJECTORY_WRITER_CLOSED', `${file}: writer is closed`));
      const next = queue.then(() => write(trajectory));
      queue = next.catch(() => {});
      return next;
    },
    async close() {
      if (closed) return;
      closed = true;
      await queue;
      await handle.close();
    },
  };
}

/** Truncates the file after its last newline; returns how many bytes were removed. */
async function removePartialLastLine(handle: FileHandle): Promise<number> {
  const { size } = await handle.stat();
  const chunk = Buffer.alloc(1 << 16);
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - chunk.length);
    const { bytesRead } = await handle.read(chunk, 0, end - start, start);
    const newline = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (newline !== -1) {
      const keep = start + newline + 1;
      if (keep < size) await handle.truncate(keep);
      return size - keep;
    }
    end = start;
  }
  if (size > 0) await handle.truncate(0);
  return size;
}
