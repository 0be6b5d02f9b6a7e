/**
 * Resolves a `--bench` value to problems: a path to a `.jsonl` / `.parquet` file, a named
 * preset found in the data folder (`aime24` → `<data-dir>/aime24.jsonl` or `.parquet`), or a
 * built-in benchmark generated in code (`arith`).
 */
import { existsSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import { resolveDataDir } from './benchmark-data-dir.ts';
import { loadBenchmarkJsonl } from './benchmark-jsonl.ts';
import { loadBenchmarkParquet } from './benchmark-parquet.ts';
import type { BenchmarkProblem, FieldMapping } from './benchmark-problem.ts';
import { BenchmarkNotFoundError } from './eval-errors.ts';

/** Names documented as presets; any `<name>.jsonl` or `<name>.parquet` in the data folder works. */
export const BENCHMARK_PRESETS = ['aime24', 'aime25', 'aime26', 'hmmt25', 'math500'] as const;

/** A benchmark generated in code. */
export type BuiltinBenchmark = {
  name: string;
  description: string;
  load: () => BenchmarkProblem[];
};

/** Where a loaded benchmark came from, as saved in a run's config. */
export type BenchmarkSource = { kind: 'file'; path: string } | { kind: 'builtin' };

export type LoadedBenchmark = { name: string; source: BenchmarkSource; problems: BenchmarkProblem[] };

export type LoadBenchmarkOptions = {
  dataDir?: string | undefined;
  fields?: FieldMapping;
  builtins?: readonly BuiltinBenchmark[];
  env?: Record<string, string | undefined>;
};

const READERS = { '.jsonl': loadBenchmarkJsonl, '.parquet': loadBenchmarkParquet } as const;

/** Loads the benchmark that `spec` names (a path, a preset or a built-in). */
export async function loadBenchmark(
  spec: string,
  options: LoadBenchmarkOptions = {},
): Promise<LoadedBenchmark> {
  const { fields, builtins = [] } = options;
  if (spec === '-') {
    // Standard input: a JSONL benchmark.
    const problems = await loadBenchmarkJsonl('-', {
      idPrefix: 'stdin',
      ...(fields === undefined ? {} : { fields }),
    });
    return { name: 'stdin', source: { kind: 'file', path: '-' }, problems };
  }
  const extension = extname(spec).toLowerCase();
  if (extension in READERS || existsSync(spec)) {
    return loadFile(resolve(spec), fields);
  }
  const builtin = builtins.find((candidate) => candidate.name === spec);
  if (builtin !== undefined)
    return { name: builtin.name, source: { kind: 'builtin' }, problems: builtin.load() };
  const dataDir = resolveDataDir({ dataDir: options.dataDir, ...(options.env ? { env: options.env } : {}) });
  if (dataDir !== null) {
    for (const fileExtension of Object.keys(READERS)) {
      const path = join(dataDir, `${spec}${fileExtension}`);
      if (existsSync(path)) return { ...(await loadFile(path, fields)), name: spec };
    }
  }
  const known = [...BENCHMARK_PRESETS, ...builtins.map((candidate) => candidate.name)].join(', ');
  throw new BenchmarkNotFoundError(
    `no benchmark "${spec}": not a file, not a built-in, and ${
      dataDir === null
        ? 'no data folder is set (pass --data-dir or set AGENTMATH_DATA_DIR)'
        : `neither ${spec}.jsonl nor ${spec}.parquet is in ${dataDir}`
    }; known names: ${known}`,
  );
}

async function loadFile(path: string, fields: FieldMapping | undefined): Promise<LoadedBenchmark> {
  const extension = extname(path).toLowerCase();
  const name = basename(path, extname(path));
  const read = READERS[extension as keyof typeof READERS];
  if (read === undefined) {
    throw new BenchmarkNotFoundError(
      `benchmark file ${path}: unsupported extension (use .jsonl or .parquet)`,
    );
  }
  if (!existsSync(path)) throw new BenchmarkNotFoundError(`benchmark file ${path} does not exist`);
  const problems = await read(path, { idPrefix: name, ...(fields === undefined ? {} : { fields }) });
  return { name, source: { kind: 'file', path }, problems };
}
