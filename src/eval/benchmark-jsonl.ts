/**
 * Reads a benchmark from a JSONL file: one JSON object per line, blank lines skipped. A line
 * that is not a JSON object, or lacks a problem or answer, is an error naming file and line.
 */
import { readTextInput, stripBom } from '../shared/text-input.ts';
import {
  assertUniqueIds,
  type BenchmarkProblem,
  type FieldMapping,
  mapBenchmarkRow,
} from './benchmark-problem.ts';
import { BenchmarkFormatError } from './eval-errors.ts';

/** Parses JSONL text; `file` is used in error messages and for fallback ids. */
export function parseBenchmarkJsonl(
  text: string,
  { file, fields, idPrefix }: { file: string; fields?: FieldMapping; idPrefix: string },
): BenchmarkProblem[] {
  const rows: { problem: BenchmarkProblem; line: number }[] = [];
  const lines = stripBom(text).split('\n');
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new BenchmarkFormatError(file, line, `not valid JSON (${(error as Error).message})`, {
        cause: error,
      });
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new BenchmarkFormatError(file, line, 'expected a JSON object');
    }
    const problem = mapBenchmarkRow(value as Record<string, unknown>, {
      file,
      line,
      fallbackId: `${idPrefix}-${rows.length + 1}`,
      ...(fields === undefined ? {} : { fields }),
    });
    rows.push({ problem, line });
  });
  if (rows.length === 0) throw new BenchmarkFormatError(file, null, 'no problems in the file');
  assertUniqueIds(rows, file);
  return rows.map((row) => row.problem);
}

/** Reads and parses a JSONL benchmark file. */
export async function loadBenchmarkJsonl(
  path: string,
  options: { fields?: FieldMapping; idPrefix: string },
): Promise<BenchmarkProblem[]> {
  return parseBenchmarkJsonl(await readTextInput(path, 'benchmark file'), { file: path, ...options });
}
