/**
 * `train sft --data FILE`: training solutions from a file instead of a task family. Reads our
 * trajectory JSONL (`trajectories.jsonl`), the solution JSONL `tasks write-arith` writes (one
 * `{problem, style, segments}` record a line, tool segments kept as they are), LLaMA-Factory ShareGPT (`sharegpt.json`: human,
 * then gpt / observation turns) and verl Parquet (`verl.parquet`, its `messages` column:
 * user, then assistant / tool). Model text is trained on; tool text is masked unless
 * `maskToolOutput` is false. Errors name the file and the record.
 */
import { readFile } from 'node:fs/promises';
import { parquetReadObjects } from 'hyparquet';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { stripBom } from '../shared/text-input.ts';
import { taskSolutionSchema } from '../tasks/task-solution-schema.ts';
import type { SolutionSegment, TaskSolution } from '../tasks/types.ts';
import { parseTrajectoryLine } from '../trajectory/trajectory-jsonl.ts';

/** The data file cannot be read or a record in it is malformed. */
export class SftDataFileError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SFT_DATA_FILE', message, options);
  }
}

function solution(
  id: string,
  problem: string,
  answer: string,
  segments: SolutionSegment[],
  maskToolOutput: boolean,
): TaskSolution {
  return {
    problem: { id, family: 'data', level: 1, problem, answer },
    style: segments.some((segment) => segment.kind === 'tool') ? 'tool' : 'text',
    segments: maskToolOutput ? segments : unmasked(segments),
  };
}

/** Every segment as model text: interpreter output trained on too (`--unmasked`). */
const unmasked = (segments: SolutionSegment[]): SolutionSegment[] =>
  segments.map((segment) => ({ kind: 'model', text: segment.text }));

type Turn = { role: string; content: string };

function fromTurns(
  file: string,
  where: string,
  id: string,
  turns: Turn[],
  maskToolOutput: boolean,
): TaskSolution {
  const [first, ...rest] = turns;
  if (first === undefined || first.role !== 'user')
    throw new SftDataFileError(`${file} ${where}: the first turn must be the user's problem`);
  const segments = rest.map((turn): SolutionSegment => {
    if (turn.role !== 'assistant' && turn.role !== 'tool')
      throw new SftDataFileError(`${file} ${where}: unexpected role "${turn.role}" after the problem`);
    return { kind: turn.role === 'assistant' ? 'model' : 'tool', text: turn.content };
  });
  if (segments.length === 0) throw new SftDataFileError(`${file} ${where}: no response turns`);
  return solution(id, first.content, '', segments, maskToolOutput);
}

/** Reads training solutions from a trajectory JSONL, ShareGPT JSON or verl Parquet file. */
export async function readSftDataFile(file: string, { maskToolOutput = true } = {}): Promise<TaskSolution[]> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw new SftDataFileError(`${file}: cannot read the data file (${(error as Error).message})`, {
      cause: error,
    });
  }
  let solutions: TaskSolution[];
  if (file.endsWith('.parquet')) {
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    const rows = await parquetReadObjects({ file: buffer }).catch((error: Error) => {
      throw new SftDataFileError(`${file}: not a readable Parquet file (${error.message})`, { cause: error });
    });
    solutions = rows.map((row, index) => {
      if (typeof row.messages !== 'string')
        throw new SftDataFileError(`${file} row ${index + 1}: missing field "messages" (JSON text)`);
      return fromTurns(
        file,
        `row ${index + 1}`,
        String(row.id ?? `row-${index + 1}`),
        JSON.parse(row.messages) as Turn[],
        maskToolOutput,
      );
    });
  } else if (file.endsWith('.json')) {
    let records: unknown;
    try {
      records = JSON.parse(stripBom(bytes.toString('utf8')));
    } catch (error) {
      throw new SftDataFileError(`${file}: not valid JSON`, { cause: error });
    }
    if (!Array.isArray(records))
      throw new SftDataFileError(`${file}: expected a JSON list of ShareGPT records`);
    const roles: Record<string, string> = { human: 'user', gpt: 'assistant', observation: 'tool' };
    solutions = records.map((record, index) => {
      const conversations = (record as { conversations?: unknown }).conversations;
      if (!Array.isArray(conversations))
        throw new SftDataFileError(`${file} record ${index + 1}: missing field "conversations"`);
      const turns = conversations.map((turn: { from?: string; value?: unknown }) => ({
        role: roles[turn.from ?? ''] ?? String(turn.from),
        content: String(turn.value ?? ''),
      }));
      return fromTurns(
        file,
        `record ${index + 1}`,
        String((record as { id?: unknown }).id ?? `record-${index + 1}`),
        turns,
        maskToolOutput,
      );
    });
  } else {
    // A byte-order mark (editors on Windows write one) is not part of the first record.
    const lines = stripBom(bytes.toString('utf8')).split('\n');
    solutions = [];
    lines.forEach((text, index) => {
      if (text.trim() === '') return;
      const task = taskSolutionLine(file, index + 1, text);
      if (task !== null) {
        solutions.push(maskToolOutput ? task : { ...task, segments: unmasked(task.segments) });
        return;
      }
      const trajectory = parseTrajectoryLine(text, { file, line: index + 1 });
      const segments = trajectory.segments.map(
        (segment): SolutionSegment => ({ kind: segment.kind, text: segment.text }),
      );
      solutions.push(
        solution(
          trajectory.problemId ?? trajectory.id,
          trajectory.prompt.text,
          trajectory.answer ?? '',
          segments,
          maskToolOutput,
        ),
      );
    });
  }
  if (solutions.length === 0) throw new SftDataFileError(`${file}: no training records`);
  return solutions;
}

/**
 * A line of a task-solution JSONL (`tasks write-arith`), told from a trajectory by its
 * `style` and `segments` without an `id`; null for any other line (read as a trajectory).
 */
function taskSolutionLine(file: string, line: number, text: string): TaskSolution | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null; // the trajectory reader names the JSON error
  }
  if (typeof value !== 'object' || value === null || 'id' in value || !('style' in value)) return null;
  const parsed = taskSolutionSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new SftDataFileError(
    `${file} line ${line}: a task-solution record with field "${issue?.path.join('.') || '(root)'}" ${issue?.message ?? 'invalid'}`,
  );
}
