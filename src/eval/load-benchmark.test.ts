import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveDataDir } from './benchmark-data-dir.ts';
import { parseBenchmarkJsonl } from './benchmark-jsonl.ts';
import { parseBenchmarkParquet } from './benchmark-parquet.ts';
import { BUILTIN_BENCHMARKS } from './builtin-benchmarks.ts';
import { loadBenchmark } from './load-benchmark.ts';

let folder: string;
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'agentmath-bench-'));
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

describe('JSONL benchmarks', () => {
  it('maps alternative field names and numeric answers', () => {
    const text = [
      '{"id":"a","problem":"1+1?","answer":"2"}',
      '',
      '{"question":"2+2?","ground_truth":4}',
      '{"prompt":"3+3?","reference":"6","level":2}',
    ].join('\n');
    expect(parseBenchmarkJsonl(text, { file: 'x.jsonl', idPrefix: 'x' })).toEqual([
      { id: 'a', problem: '1+1?', answer: '2' },
      { id: 'x-2', problem: '2+2?', answer: '4' },
      { id: 'x-3', problem: '3+3?', answer: '6', level: 2 },
    ]);
  });

  it('honours an explicit field mapping', () => {
    const problems = parseBenchmarkJsonl('{"q":"why?","gold":"because","uid":"u1"}', {
      file: 'x.jsonl',
      idPrefix: 'x',
      fields: { problem: 'q', answer: 'gold', id: 'uid' },
    });
    expect(problems).toEqual([{ id: 'u1', problem: 'why?', answer: 'because' }]);
  });

  it('names file and line for malformed input', () => {
    const parse = (text: string) => () => parseBenchmarkJsonl(text, { file: 'b.jsonl', idPrefix: 'b' });
    expect(parse('{"problem":"p","answer":"1"}\n{"problem": oops}')).toThrow(
      /b\.jsonl line 2: not valid JSON/,
    );
    expect(parse('{"problem":"p","answer":"1"}\n\n{"problem":"q"}')).toThrow(
      /b\.jsonl line 3: missing field "answer" \(looked for "answer", "ground_truth", "reference"\)/,
    );
    expect(parse('[1,2]')).toThrow(/b\.jsonl line 1: expected a JSON object/);
    expect(parse('{"problem":"p","answer":[1]}')).toThrow(
      /line 1: field "answer" must be a string or a number/,
    );
    expect(parse('{"id":"d","problem":"p","answer":"1"}\n{"id":"d","problem":"q","answer":"2"}')).toThrow(
      /line 2: duplicate id "d" \(first on line 1\)/,
    );
    expect(parse('\n\n')).toThrow(/no problems/);
  });
});

describe('Parquet benchmarks', () => {
  it.each(['SNAPPY', 'UNCOMPRESSED'] as const)('reads PLAIN and dictionary columns (%s)', async (codec) => {
    const problems = Array.from({ length: 40 }, (_, index) => `What is ${index} + ${index}?`);
    const buffer = parquetWriteBuffer({
      columnData: [
        // Unique strings are written PLAIN; repeated values make the writer use a dictionary.
        { name: 'question', data: problems, type: 'STRING' },
        { name: 'ground_truth', data: problems.map((_, index) => String((index % 4) * 2)), type: 'STRING' },
        { name: 'level', data: problems.map((_, index) => (index % 3) + 1), type: 'INT32' },
        { name: 'idx', data: problems.map((_, index) => BigInt(index + 100)), type: 'INT64' },
      ],
      codec,
    });
    const columns = parquetMetadata(buffer).row_groups[0]?.columns.map((column) => column.meta_data);
    expect(columns?.every((column) => column?.codec === codec)).toBe(true);
    expect(columns?.[1]?.encodings).toContain('RLE_DICTIONARY');
    const path = join(folder, 'toy.parquet');
    writeFileSync(path, new Uint8Array(buffer));
    const loaded = await loadBenchmark(path);
    expect(loaded.name).toBe('toy');
    expect(loaded.problems).toHaveLength(40);
    expect(loaded.problems[5]).toEqual({ id: '105', problem: 'What is 5 + 5?', answer: '2', level: 3 });
    expect(loaded.problems[39]).toEqual({ id: '139', problem: 'What is 39 + 39?', answer: '6', level: 1 });
  });

  it('names the file and row of a row without an answer', async () => {
    const buffer = parquetWriteBuffer({
      columnData: [
        { name: 'problem', data: ['a', 'b'], type: 'STRING' },
        { name: 'answer', data: ['1', null], type: 'STRING' },
      ],
    });
    await expect(
      parseBenchmarkParquet(new Uint8Array(buffer), { file: 'p.parquet', idPrefix: 'p' }),
    ).rejects.toThrow(/p\.parquet line 2: missing field "answer"/);
    await expect(
      parseBenchmarkParquet(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9]), {
        file: 'bad.parquet',
        idPrefix: 'b',
      }),
    ).rejects.toThrow(/bad\.parquet: not a readable Parquet file/);
  });
});

describe('presets and the data folder', () => {
  it('resolves a preset from --data-dir, then the environment', async () => {
    writeFileSync(join(folder, 'mini.jsonl'), '{"id":"m1","problem":"p","answer":"1"}\n');
    const fromOption = await loadBenchmark('mini', { dataDir: folder, env: {} });
    expect(fromOption).toMatchObject({
      name: 'mini',
      source: { kind: 'file', path: join(folder, 'mini.jsonl') },
    });
    const fromEnv = await loadBenchmark('mini', { env: { AGENTMATH_DATA_DIR: folder } });
    expect(fromEnv.problems).toEqual([{ id: 'm1', problem: 'p', answer: '1' }]);
  });

  it('finds shared/data/benchmarks above the project folder', () => {
    const nested = join(folder, 'wt', 'branch');
    const data = join(folder, 'shared', 'data', 'benchmarks');
    mkdirSync(nested, { recursive: true });
    mkdirSync(data, { recursive: true });
    expect(resolveDataDir({ env: {}, projectRoot: nested })).toBe(data);
    expect(resolveDataDir({ env: {}, projectRoot: join(tmpdir(), 'no-such-project-x', 'y') })).toBe(null);
  });

  it('loads a built-in and explains an unknown name', async () => {
    const builtins = [
      { name: 'toy', description: 'toy', load: () => [{ id: 't', problem: 'p', answer: '0' }] },
    ];
    expect((await loadBenchmark('toy', { builtins, env: {}, dataDir: folder })).problems).toHaveLength(1);
    await expect(loadBenchmark('aime99', { builtins, dataDir: folder })).rejects.toThrow(
      /no benchmark "aime99".*neither aime99\.jsonl nor aime99\.parquet is in .*known names: aime24, .*toy/,
    );
  });

  it('loads the built-in arith benchmark from the tasks module, the same every time', async () => {
    const loaded = await loadBenchmark('arith', { builtins: BUILTIN_BENCHMARKS, env: {}, dataDir: folder });
    expect(loaded).toMatchObject({ name: 'arith', source: { kind: 'builtin' } });
    expect(loaded.problems).toHaveLength(200);
    expect(new Set(loaded.problems.map((problem) => problem.id)).size).toBe(200);
    expect(new Set(loaded.problems.map((problem) => problem.level))).toEqual(new Set([1, 2, 3, 4]));
    expect(loaded.problems.every((problem) => problem.answer !== '' && problem.problem !== '')).toBe(true);
    expect((await loadBenchmark('arith', { builtins: BUILTIN_BENCHMARKS })).problems).toEqual(
      loaded.problems,
    );
  });

  it('reads the shared AIME 2024 file when the machine has it', async () => {
    const dataDir = resolveDataDir({ env: {} });
    if (dataDir === null) return;
    const loaded = await loadBenchmark('aime24', { dataDir });
    expect(loaded.problems).toHaveLength(30);
    expect(loaded.problems[0]?.id).toBe('aime24-001');
  });
});
