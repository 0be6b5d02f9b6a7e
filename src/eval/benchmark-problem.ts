/**
 * The problem record every benchmark source produces, and the field mapping that turns a raw
 * row (JSONL object or Parquet row) into one. Column names differ between datasets; the
 * mapping tries each known name in order unless the caller names the column.
 */
import { BenchmarkFormatError } from './eval-errors.ts';

/** One benchmark problem with its reference answer. */
export type BenchmarkProblem = {
  id: string;
  problem: string;
  answer: string;
  /** Difficulty level when the source declares one. */
  level?: number;
};

/** Column names to use instead of the defaults; each is tried alone when given. */
export type FieldMapping = { id?: string; problem?: string; answer?: string };

/** Names tried in order when the mapping does not name a column. */
export const DEFAULT_FIELD_NAMES = {
  id: ['id', 'problem_id', 'unique_id', 'idx'],
  problem: ['problem', 'question', 'prompt'],
  answer: ['answer', 'ground_truth', 'reference'],
} as const;

/**
 * Maps one raw row to a problem. `where` locates the row for errors; `fallbackId` is used when
 * the row has no id column (the row's 1-based position, so ids stay stable across runs).
 */
export function mapBenchmarkRow(
  row: Record<string, unknown>,
  {
    file,
    line,
    fallbackId,
    fields = {},
  }: { file: string; line: number; fallbackId: string; fields?: FieldMapping },
): BenchmarkProblem {
  const problem = pickField(row, 'problem', fields.problem, { file, line });
  const answer = pickField(row, 'answer', fields.answer, { file, line });
  if (problem === undefined) throw missing(file, line, 'problem', fields.problem);
  if (answer === undefined) throw missing(file, line, 'answer', fields.answer);
  const id = pickField(row, 'id', fields.id, { file, line }) ?? fallbackId;
  const level = typeof row.level === 'number' && Number.isFinite(row.level) ? { level: row.level } : {};
  return { id, problem, answer, ...level };
}

function pickField(
  row: Record<string, unknown>,
  role: keyof typeof DEFAULT_FIELD_NAMES,
  override: string | undefined,
  where: { file: string; line: number },
): string | undefined {
  const names = override === undefined ? DEFAULT_FIELD_NAMES[role] : [override];
  for (const name of names) {
    const value = row[name];
    if (value === undefined || value === null) continue;
    if (typeof value === 'string') {
      if (value.trim() === '')
        throw new BenchmarkFormatError(where.file, where.line, `field "${name}" is empty`);
      return value;
    }
    if (typeof value === 'number' || typeof value === 'bigint') return String(value);
    throw new BenchmarkFormatError(
      where.file,
      where.line,
      `field "${name}" must be a string or a number, got ${Array.isArray(value) ? 'an array' : typeof value}`,
    );
  }
  return undefined;
}

function missing(file: string, line: number, role: 'problem' | 'answer', override: string | undefined) {
  const names = override === undefined ? DEFAULT_FIELD_NAMES[role] : [override];
  return new BenchmarkFormatError(
    file,
    line,
    `missing field "${role}" (looked for ${names.map((name) => `"${name}"`).join(', ')})`,
  );
}

/** Throws when two problems share an id: results are keyed by (problem id, sample). */
export function assertUniqueIds(
  rows: readonly { problem: BenchmarkProblem; line: number }[],
  file: string,
): void {
  const seen = new Map<string, number>();
  for (const { problem, line } of rows) {
    const first = seen.get(problem.id);
    if (first !== undefined) {
      throw new BenchmarkFormatError(file, line, `duplicate id "${problem.id}" (first on line ${first})`);
    }
    seen.set(problem.id, line);
  }
}
