/**
 * Reads a benchmark from a Parquet file with hyparquet (pure JavaScript: PLAIN and dictionary
 * encodings, uncompressed and SNAPPY pages). Rows go through the same field mapping as JSONL;
 * errors name the file and the 1-based row as its "line".
 */
import { readFile } from 'node:fs/promises';
import { parquetReadObjects } from 'hyparquet';
import {
  assertUniqueIds,
  type BenchmarkProblem,
  type FieldMapping,
  mapBenchmarkRow,
} from './benchmark-problem.ts';
import { BenchmarkFormatError } from './eval-errors.ts';

/** Parses Parquet bytes; `file` is used in error messages. */
export async function parseBenchmarkParquet(
  bytes: Uint8Array,
  { file, fields, idPrefix }: { file: string; fields?: FieldMapping; idPrefix: string },
): Promise<BenchmarkProblem[]> {
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  let records: Record<string, unknown>[];
  try {
    records = await parquetReadObjects({ file: buffer });
  } catch (error) {
    throw new BenchmarkFormatError(file, null, `not a readable Parquet file (${(error as Error).message})`, {
      cause: error,
    });
  }
  const rows = records.map((record, index) => ({
    problem: mapBenchmarkRow(record, {
      file,
      line: index + 1,
      fallbackId: `${idPrefix}-${index + 1}`,
      ...(fields === undefined ? {} : { fields }),
    }),
    line: index + 1,
  }));
  if (rows.length === 0) throw new BenchmarkFormatError(file, null, 'no rows in the file');
  assertUniqueIds(rows, file);
  return rows.map((row) => row.problem);
}

/** Reads and parses a Parquet benchmark file. */
export async function loadBenchmarkParquet(
  path: string,
  options: { fields?: FieldMapping; idPrefix: string },
): Promise<BenchmarkProblem[]> {
  return parseBenchmarkParquet(await readFile(path), { file: path, ...options });
}
