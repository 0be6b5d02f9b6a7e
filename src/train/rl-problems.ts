/**
 * The problems `train rl` trains on: a `--data` file (JSONL or Parquet, read by the loader
 * `eval` uses, with its field mapping) or a `--bench` set (a preset, a benchmark file or a
 * built-in), checked by default against the benchmark sets with the synthesis pipeline's word
 * n-gram index; the seeded epoch-by-epoch order the rollout takes them in; and the
 * `decontamination.json` record of the run folder. It does not build prompts or grade.
 *
 * Rule for `--bench`: the set trained on is never checked against itself (every problem would
 * match); it is listed under `excluded` in the record, and the record says the run trains on a
 * benchmark. A `--data` file is checked against every set, whatever its name.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import { resolveDataDir } from '../eval/benchmark-data-dir.ts';
import type { FieldMapping } from '../eval/benchmark-problem.ts';
import { BUILTIN_BENCHMARKS } from '../eval/builtin-benchmarks.ts';
import { DEFAULT_NGRAM, NgramIndex } from '../eval/decontamination.ts';
import { type LoadedBenchmark, loadBenchmark } from '../eval/load-benchmark.ts';
import type { RolloutProblem } from '../rollout/types.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { createSeededRandom, shuffleInPlace } from '../tasks/seeded-random.ts';

/** The record's name in the run folder. */
export const DECONTAMINATION_FILE = 'decontamination.json';

/** Where the training problems came from. `path` is null for a built-in benchmark. */
export type RlProblemSource =
  | { kind: 'data'; path: string }
  | { kind: 'bench'; name: string; path: string | null };

/** A training problem dropped because it shares an n-gram with a benchmark problem. */
export type RlRemovedProblem = {
  id: string;
  /** The benchmark it matched (`aime24`). */
  matched: string;
  /** The matched benchmark problem's id. */
  matchedId: string;
  /** The first shared n-gram, as lower-cased words joined by one space. */
  ngram: string;
};

export type RlDecontamination = {
  ngram: number;
  /** Names of the benchmark sets checked, in the order they were read. */
  checkedAgainst: string[];
  /** Their files (`builtin:<name>` for a built-in). */
  files: string[];
  /** Sets left out of the check, with why (the `--bench` set itself). */
  excluded: { name: string; reason: string }[];
  removed: RlRemovedProblem[];
};

export type RlProblemSet = {
  name: string;
  source: RlProblemSource;
  /** Problems read before decontamination. */
  loadedCount: number;
  problems: RolloutProblem[];
  /** Null when decontamination was turned off. */
  decontamination: RlDecontamination | null;
};

export type LoadRlProblemsOptions = {
  /** A JSONL or Parquet file of problems with reference answers. */
  data?: string | undefined;
  /** A benchmark to train on: preset name, benchmark file or built-in. */
  bench?: string | undefined;
  fields?: FieldMapping | undefined;
  dataDir?: string | undefined;
  seed: number;
  decontaminate: boolean;
  /** Benchmark names or files to check against; default every `.jsonl`/`.parquet` in the data folder. */
  decontaminateAgainst?: readonly string[] | undefined;
  ngram?: number | undefined;
  env?: Record<string, string | undefined>;
};

/** Thrown for bad options, a missing `--data` file, nothing to check against, or no problems left. */
export class RlProblemsError extends AgentMathError {
  constructor(
    code:
      | 'RL_PROBLEMS_OPTIONS'
      | 'RL_DATA_NOT_FOUND'
      | 'RL_DECONTAMINATION_UNAVAILABLE'
      | 'RL_PROBLEMS_EMPTY',
    message: string,
  ) {
    super(code, message);
  }
}

const BENCHMARK_EXTENSIONS = new Set(['.jsonl', '.parquet']);

/**
 * Loads the training problems and removes those that share an n-gram with a benchmark problem.
 * Loader errors (a row without a problem or answer, a duplicate id) name the file and line.
 */
export async function loadRlProblems(options: LoadRlProblemsOptions): Promise<RlProblemSet> {
  const { data, bench, fields, decontaminate } = options;
  if ((data === undefined) === (bench === undefined)) {
    throw new RlProblemsError('RL_PROBLEMS_OPTIONS', 'give exactly one of --data FILE and --bench NAME');
  }
  const loadOptions = {
    dataDir: options.dataDir,
    builtins: BUILTIN_BENCHMARKS,
    ...(fields === undefined ? {} : { fields }),
    ...(options.env === undefined ? {} : { env: options.env }),
  };
  let loaded: LoadedBenchmark;
  let source: RlProblemSource;
  if (data !== undefined) {
    // A file only: a bare name must not fall through to a preset of the data folder.
    if (!existsSync(data)) {
      throw new RlProblemsError(
        'RL_DATA_NOT_FOUND',
        `training data file ${data} does not exist (to train on a benchmark, use --bench NAME)`,
      );
    }
    loaded = await loadBenchmark(resolve(data), loadOptions);
    source = { kind: 'data', path: resolve(data) };
  } else {
    loaded = await loadBenchmark(bench as string, loadOptions);
    source = {
      kind: 'bench',
      name: loaded.name,
      path: loaded.source.kind === 'file' ? loaded.source.path : null,
    };
  }
  const all = loaded.problems.map(({ id, problem, answer }) => ({ id, text: problem, answer }));
  const decontamination = decontaminate ? await checkAgainstBenchmarks(all, loaded, source, options) : null;
  const removedIds = new Set(decontamination?.removed.map((removed) => removed.id));
  const problems = all.filter((problem) => !removedIds.has(problem.id));
  if (problems.length === 0) {
    throw new RlProblemsError(
      'RL_PROBLEMS_EMPTY',
      decontamination === null
        ? `no training problems in ${loaded.name}`
        : `no training problems left in ${loaded.name}: all ${all.length} share a ${decontamination.ngram}-gram` +
            ` with ${decontamination.checkedAgainst.join(', ')} (to train on a benchmark on purpose, use --bench NAME)`,
    );
  }
  return { name: loaded.name, source, loadedCount: all.length, problems, decontamination };
}

async function checkAgainstBenchmarks(
  problems: readonly RolloutProblem[],
  trained: LoadedBenchmark,
  source: RlProblemSource,
  options: LoadRlProblemsOptions,
): Promise<RlDecontamination> {
  const dataDir = resolveDataDir({
    dataDir: options.dataDir,
    ...(options.env === undefined ? {} : { env: options.env }),
  });
  const specs = options.decontaminateAgainst ?? (await benchmarkFiles(dataDir));
  const index = new NgramIndex(options.ngram ?? DEFAULT_NGRAM);
  // The index keeps one string per n-gram; this map turns it back into (benchmark, id).
  const origins = new Map<string, { benchmark: string; id: string }>();
  const checkedAgainst: string[] = [];
  const files: string[] = [];
  const excluded: RlDecontamination['excluded'] = [];
  for (const spec of specs) {
    const benchmark = await loadBenchmark(spec, {
      dataDir: options.dataDir,
      builtins: BUILTIN_BENCHMARKS,
      ...(options.env === undefined ? {} : { env: options.env }),
    });
    if (source.kind === 'bench' && isSameSet(benchmark, trained)) {
      excluded.push({ name: benchmark.name, reason: 'the set trained on (--bench)' });
      continue;
    }
    checkedAgainst.push(benchmark.name);
    files.push(benchmark.source.kind === 'file' ? benchmark.source.path : `builtin:${benchmark.name}`);
    for (const problem of benchmark.problems) {
      const label = `${benchmark.name}:${problem.id}`;
      origins.set(label, { benchmark: benchmark.name, id: problem.id });
      index.add(problem.problem, label);
    }
  }
  if (checkedAgainst.length === 0) {
    throw new RlProblemsError(
      'RL_DECONTAMINATION_UNAVAILABLE',
      `no benchmark set to decontaminate ${trained.name} against (${
        dataDir === null
          ? 'no data folder: pass --data-dir or set AGENTMATH_DATA_DIR'
          : `none left in ${dataDir}`
      }); name the sets to check, or turn decontamination off`,
    );
  }
  const removed: RlRemovedProblem[] = [];
  for (const problem of problems) {
    const [first] = index.matches(problem.text);
    if (first === undefined) continue;
    const origin = origins.get(first.source);
    if (origin === undefined) throw new Error(`unknown n-gram source ${first.source}`);
    removed.push({ id: problem.id, matched: origin.benchmark, matchedId: origin.id, ngram: first.ngram });
  }
  return { ngram: index.n, checkedAgainst, files, excluded, removed };
}

/** Every benchmark file in the data folder, sorted; none when there is no data folder. */
async function benchmarkFiles(dataDir: string | null): Promise<string[]> {
  if (dataDir === null) return [];
  const names = (await readdir(dataDir)).filter((name) =>
    BENCHMARK_EXTENSIONS.has(extname(name).toLowerCase()),
  );
  return names.sort().map((name) => join(dataDir, name));
}

/** The same file, or the same name (a copy of `math500.jsonl` elsewhere is still math500). */
function isSameSet(candidate: LoadedBenchmark, trained: LoadedBenchmark): boolean {
  if (candidate.name === trained.name) return true;
  return (
    candidate.source.kind === 'file' &&
    trained.source.kind === 'file' &&
    candidate.source.path === trained.source.path
  );
}

/**
 * `count` problems in training order: epoch after epoch over the whole set, each epoch a fresh
 * shuffle seeded by (seed, epoch), so every problem comes once per epoch and a seed fixes it all.
 */
export function rlProblemOrder(
  problems: readonly RolloutProblem[],
  { seed, count }: { seed: number; count: number },
): RolloutProblem[] {
  if (!Number.isInteger(count) || count < 0) {
    throw new RlProblemsError(
      'RL_PROBLEMS_OPTIONS',
      `problem count must be a whole number >= 0 (got ${count})`,
    );
  }
  if (problems.length === 0 && count > 0) {
    throw new RlProblemsError('RL_PROBLEMS_EMPTY', 'no problems to order');
  }
  const order: RolloutProblem[] = [];
  for (let epoch = 0; order.length < count; epoch++) {
    const random = createSeededRandom(`${seed}:rl-epoch:${epoch}`);
    order.push(...shuffleInPlace(random, [...problems]).slice(0, count - order.length));
  }
  return order;
}

/** Writes `decontamination.json` in `folder` atomically (temporary file, then rename). */
export async function writeDecontaminationRecord(folder: string, set: RlProblemSet): Promise<void> {
  const { decontamination } = set;
  const record = {
    name: set.name,
    source: set.source,
    trainedOnBenchmark: set.source.kind === 'bench',
    decontaminated: decontamination !== null,
    ngram: decontamination?.ngram ?? null,
    checkedAgainst: decontamination?.checkedAgainst ?? [],
    files: decontamination?.files ?? [],
    excluded: decontamination?.excluded ?? [],
    loaded: set.loadedCount,
    kept: set.problems.length,
    removedCount: decontamination?.removed.length ?? 0,
    removed: decontamination?.removed ?? [],
  };
  await mkdir(folder, { recursive: true });
  const file = join(folder, DECONTAMINATION_FILE);
  await writeFile(`${file}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  await rename(`${file}.tmp`, file);
}
