/**
 * Reads synthesis input: JSONL or Parquet rows mapped to `SynthRecord`s through a field
 * mapping (`problem=question,solution=cot,answer=gt,id=uid`), or HF chat rows with a
 * `messages` list (the first user turn is the problem, the last assistant turn the solution).
 * A row that cannot be mapped is not fatal: it is returned with the file, line and field at
 * fault, so the run counts and reports it; an unreadable file is an error. `-` reads JSONL
 * from standard input; a UTF-8 byte-order mark at the start is dropped, as every reader does.
 */
import { readFile } from 'node:fs/promises';
import { parquetReadObjects } from 'hyparquet';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { readTextInput, STDIN_PATH, stripBom } from '../shared/text-input.ts';
import type { SynthRecord } from './synth-record.ts';

/** Which input field holds each record field. */
export type SynthFieldMapping = { id: string; problem: string; solution: string; answer: string };

export const DEFAULT_FIELDS: SynthFieldMapping = {
  id: 'id',
  problem: 'problem',
  solution: 'solution',
  answer: 'answer',
};

/** A row skipped, with where and why. */
export type SynthInputSkip = { file: string; line: number; field: string | null; message: string };

export type SynthInput = { records: SynthRecord[]; skipped: SynthInputSkip[] };

/** The input file cannot be read at all, or a flag is malformed. */
export class SynthInputError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SYNTH_INPUT_INVALID', message, options);
  }
}

/** Parses `--fields problem=question,solution=cot`; unknown names are errors. */
export function parseFieldMapping(text: string | undefined): SynthFieldMapping {
  const mapping = { ...DEFAULT_FIELDS };
  if (text === undefined || text.trim() === '') return mapping;
  for (const pair of text.split(',')) {
    const [key, value, ...rest] = pair.split('=').map((part) => part.trim());
    if (key === undefined || value === undefined || value === '' || rest.length > 0 || !(key in mapping)) {
      throw new SynthInputError(
        `--fields: "${pair}" is not NAME=FIELD with NAME one of ${Object.keys(mapping).join(', ')}`,
      );
    }
    mapping[key as keyof SynthFieldMapping] = value;
  }
  return mapping;
}

type RowResult =
  | { status: 'ok'; record: SynthRecord }
  | { status: 'skip'; field: string | null; message: string };

/** A scalar answer as text (numbers are common in datasets). */
function asText(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  return null;
}

function messagesOf(row: Record<string, unknown>): { problem: string; solution: string } | string {
  const messages = row.messages;
  if (!Array.isArray(messages)) return 'not a list';
  const turns = messages.map((message) =>
    message !== null && typeof message === 'object'
      ? {
          role: (message as Record<string, unknown>).role,
          content: (message as Record<string, unknown>).content,
        }
      : { role: undefined, content: undefined },
  );
  const problem = turns.find((turn) => turn.role === 'user')?.content;
  const solution = turns.findLast((turn) => turn.role === 'assistant')?.content;
  if (typeof problem !== 'string') return 'has no user turn with text content';
  if (typeof solution !== 'string') return 'has no assistant turn with text content';
  return { problem, solution };
}

/** Maps one row; `line` is 1-based and also the fallback id. */
export function mapSynthRow(row: unknown, fields: SynthFieldMapping, line: number): RowResult {
  if (row === null || typeof row !== 'object' || Array.isArray(row)) {
    return { status: 'skip', field: null, message: 'not a JSON object' };
  }
  const record = row as Record<string, unknown>;
  const id = asText(record[fields.id]) ?? `row-${line}`;
  let problem = record[fields.problem];
  let solution = record[fields.solution];
  if (problem === undefined && solution === undefined && 'messages' in record) {
    const fromMessages = messagesOf(record);
    if (typeof fromMessages === 'string') return { status: 'skip', field: 'messages', message: fromMessages };
    ({ problem, solution } = fromMessages);
  }
  if (typeof problem !== 'string' || problem.trim() === '') {
    return { status: 'skip', field: fields.problem, message: 'missing or empty text' };
  }
  if (typeof solution !== 'string' || solution.trim() === '') {
    return { status: 'skip', field: fields.solution, message: 'missing or empty text' };
  }
  const rawAnswer = record[fields.answer];
  const answer = rawAnswer === undefined || rawAnswer === null ? null : asText(rawAnswer);
  if (rawAnswer !== undefined && rawAnswer !== null && answer === null) {
    return { status: 'skip', field: fields.answer, message: 'not a string or number' };
  }
  return { status: 'ok', record: { id, problem, solution, answer } };
}

function collect(
  file: string,
  rows: Iterable<{ row: unknown; line: number } | { error: string; line: number }>,
  fields: SynthFieldMapping,
): SynthInput {
  const records: SynthRecord[] = [];
  const skipped: SynthInputSkip[] = [];
  const seen = new Set<string>();
  for (const entry of rows) {
    if ('error' in entry) {
      skipped.push({ file, line: entry.line, field: null, message: entry.error });
      continue;
    }
    const mapped = mapSynthRow(entry.row, fields, entry.line);
    if (mapped.status === 'skip') {
      skipped.push({ file, line: entry.line, field: mapped.field, message: mapped.message });
    } else if (seen.has(mapped.record.id)) {
      skipped.push({
        file,
        line: entry.line,
        field: fields.id,
        message: `duplicate id "${mapped.record.id}"`,
      });
    } else {
      seen.add(mapped.record.id);
      records.push(mapped.record);
    }
  }
  return { records, skipped };
}

function* jsonlRows(
  text: string,
): Iterable<{ row: unknown; line: number } | { error: string; line: number }> {
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!;
    if (line.trim() === '') continue;
    try {
      yield { row: JSON.parse(line), line: index + 1 };
    } catch (error) {
      yield { error: `not valid JSON (${(error as Error).message})`, line: index + 1 };
    }
  }
}

/** Reads a `.jsonl` or `.parquet` input file. */
export async function readSynthInput(
  file: string,
  fields: SynthFieldMapping = DEFAULT_FIELDS,
): Promise<SynthInput> {
  if (file === STDIN_PATH)
    return collect(file, jsonlRows(await readTextInput(STDIN_PATH, '--input')), fields);
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw new SynthInputError(`${file}: cannot read the input file (${(error as Error).message})`, {
      cause: error,
    });
  }
  if (file.endsWith('.parquet')) {
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    let rows: Record<string, unknown>[];
    try {
      rows = await parquetReadObjects({ file: buffer });
    } catch (error) {
      throw new SynthInputError(`${file}: not a readable Parquet file (${(error as Error).message})`, {
        cause: error,
      });
    }
    return collect(
      file,
      rows.map((row, index) => ({ row, line: index + 1 })),
      fields,
    );
  }
  return collect(file, jsonlRows(stripBom(bytes.toString('utf8'))), fields);
}
