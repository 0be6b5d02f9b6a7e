import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveDataDir } from '../eval/benchmark-data-dir.ts';
import type { RolloutProblem } from '../rollout/types.ts';
import {
  DECONTAMINATION_FILE,
  loadRlProblems,
  type RlProblemSet,
  rlProblemOrder,
  writeDecontaminationRecord,
} from './rl-problems.ts';

// The shared benchmark folder beside the project (never copied into it).
const BENCHMARKS = resolveDataDir({ env: {} });
const UNRELATED = 'A farmer keeps 17 sheep in a pen, buys 5 more at the market, then sells 3 of them.';

/** A problem of a shared benchmark file, by id, or its first one. */
function benchmarkProblem(name: string, id?: string): { id: string; problem: string; answer: string } {
  if (BENCHMARKS === null) throw new Error('no shared/data/benchmarks folder above the project');
  const rows = readFileSync(join(BENCHMARKS, `${name}.jsonl`), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { id: string; problem: string; answer: string });
  const row = id === undefined ? rows[0] : rows.find((candidate) => candidate.id === id);
  if (row === undefined) throw new Error(`${name} has no problem ${id}`);
  return row;
}

let folder: string;
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'agentmath-rl-problems-'));
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

function writeJsonl(name: string, rows: object[]): string {
  const path = join(folder, name);
  writeFileSync(path, rows.map((row) => `${JSON.stringify(row)}\n`).join(''));
  return path;
}

describe('loadRlProblems: reading', () => {
  it('maps named columns of a JSONL file to {id, text, answer}', async () => {
    const data = writeJsonl('train.jsonl', [
      { uid: 'u1', statement: 'What is 2 + 3?', final: 5, answer: 'not this one' },
      { uid: 'u2', statement: 'What is 7 * 6?', final: '42' },
    ]);
    const set = await loadRlProblems({
      data,
      fields: { id: 'uid', problem: 'statement', answer: 'final' },
      seed: 0,
      decontaminate: false,
    });
    expect(set).toEqual({
      name: 'train',
      source: { kind: 'data', path: data },
      loadedCount: 2,
      problems: [
        { id: 'u1', text: 'What is 2 + 3?', answer: '5' },
        { id: 'u2', text: 'What is 7 * 6?', answer: '42' },
      ],
      decontamination: null,
    });
  });

  it('reads Parquet through the same loader', async () => {
    const path = join(folder, 'train.parquet');
    const buffer = parquetWriteBuffer({
      columnData: [
        { name: 'question', data: ['What is 1 + 1?', 'What is 2 + 2?', UNRELATED], type: 'STRING' },
        { name: 'ground_truth', data: ['2', '4', '19'], type: 'STRING' },
      ],
    });
    writeFileSync(path, new Uint8Array(buffer));
    const set = await loadRlProblems({ data: path, seed: 0, decontaminate: false });
    expect(set.name).toBe('train');
    expect(set.problems).toEqual([
      { id: 'train-1', text: 'What is 1 + 1?', answer: '2' },
      { id: 'train-2', text: 'What is 2 + 2?', answer: '4' },
      { id: 'train-3', text: UNRELATED, answer: '19' },
    ]);
  });

  it('names the file and line of a problem without an answer, or with an empty one', async () => {
    const missing = writeJsonl('missing.jsonl', [
      { id: 'a', problem: 'p', answer: '1' },
      { id: 'b', problem: 'q' },
    ]);
    await expect(loadRlProblems({ data: missing, seed: 0, decontaminate: false })).rejects.toMatchObject({
      code: 'BENCHMARK_FORMAT',
      message: expect.stringMatching(/missing\.jsonl line 2: missing field "answer"/),
    });
    const empty = writeJsonl('empty.jsonl', [{ id: 'a', problem: 'p', answer: '  ' }]);
    await expect(loadRlProblems({ data: empty, seed: 0, decontaminate: false })).rejects.toThrow(
      /empty\.jsonl line 1: field "answer" is empty/,
    );
  });

  it('wants exactly one of data and bench, and a data file that exists', async () => {
    await expect(loadRlProblems({ seed: 0, decontaminate: false })).rejects.toMatchObject({
      code: 'RL_PROBLEMS_OPTIONS',
    });
    await expect(
      loadRlProblems({ data: 'x.jsonl', bench: 'aime24', seed: 0, decontaminate: false }),
    ).rejects.toMatchObject({ code: 'RL_PROBLEMS_OPTIONS' });
    // A bare name is not looked up among the presets: --data is a file.
    await expect(loadRlProblems({ data: 'aime24', seed: 0, decontaminate: false })).rejects.toMatchObject({
      code: 'RL_DATA_NOT_FOUND',
      message: expect.stringMatching(/training data file aime24 does not exist.*--bench/),
    });
  });
});

describe('loadRlProblems: decontamination', () => {
  it('removes a problem copied from aime24 and keeps an unrelated one', async () => {
    const copied = benchmarkProblem('aime24', 'aime24-010');
    const data = writeJsonl('train.jsonl', [
      { id: 'copied', problem: `Solve carefully. ${copied.problem}`, answer: copied.answer },
      { id: 'clean', problem: UNRELATED, answer: '19' },
    ]);
    const set = await loadRlProblems({ data, seed: 0, decontaminate: true });
    expect(set.problems.map((problem) => problem.id)).toEqual(['clean']);
    expect(set.loadedCount).toBe(2);
    expect(set.decontamination).toMatchObject({
      ngram: 8,
      checkedAgainst: ['aime24', 'aime25', 'aime26', 'hmmt25', 'math500'],
      excluded: [],
      removed: [{ id: 'copied', matched: 'aime24', matchedId: 'aime24-010' }],
    });
    expect(set.decontamination?.files[0]).toBe(join(BENCHMARKS ?? '', 'aime24.jsonl'));

    await writeDecontaminationRecord(folder, set);
    const record = JSON.parse(readFileSync(join(folder, DECONTAMINATION_FILE), 'utf8'));
    expect(record).toMatchObject({
      name: 'train',
      trainedOnBenchmark: false,
      decontaminated: true,
      ngram: 8,
      checkedAgainst: ['aime24', 'aime25', 'aime26', 'hmmt25', 'math500'],
      loaded: 2,
      kept: 1,
      removedCount: 1,
      removed: [{ id: 'copied', matched: 'aime24', matchedId: 'aime24-010' }],
    });
    expect(record.removed[0].ngram.split(' ')).toHaveLength(8);
  });

  it('checks only the sets named, with the n-gram size asked for', async () => {
    const copied = benchmarkProblem('aime24', 'aime24-010');
    // Six consecutive words of the aime24 problem: caught with n = 6, not with the default 8.
    const six = copied.problem.split(/\s+/).slice(0, 6).join(' ');
    const data = writeJsonl('train.jsonl', [
      { id: 'short', problem: `${six} quickly.`, answer: '1' },
      { id: 'clean', problem: UNRELATED, answer: '19' },
    ]);
    const against = { data, seed: 0, decontaminate: true, decontaminateAgainst: ['aime24'] };
    const withSix = await loadRlProblems({ ...against, ngram: 6 });
    expect(withSix.problems.map((problem) => problem.id)).toEqual(['clean']);
    expect(withSix.decontamination).toMatchObject({
      ngram: 6,
      removed: [{ id: 'short', matchedId: 'aime24-010' }],
    });
    const withEight = await loadRlProblems(against);
    expect(withEight.problems).toHaveLength(2);
    expect(withEight.decontamination?.checkedAgainst).toEqual(['aime24']);
  });

  it('says clearly when every problem was removed', async () => {
    const data = writeJsonl('leaked.jsonl', [
      benchmarkProblem('aime24', 'aime24-002'),
      benchmarkProblem('math500'),
    ]);
    await expect(loadRlProblems({ data, seed: 0, decontaminate: true })).rejects.toMatchObject({
      code: 'RL_PROBLEMS_EMPTY',
      message: expect.stringMatching(
        /no training problems left in leaked: all 2 share a 8-gram with aime24, .*--bench/,
      ),
    });
  });

  it('trains on a --bench set without checking it against itself, and records that', async () => {
    const set = await loadRlProblems({ bench: 'aime24', seed: 0, decontaminate: true });
    expect(set.source).toEqual({
      kind: 'bench',
      name: 'aime24',
      path: join(BENCHMARKS ?? '', 'aime24.jsonl'),
    });
    expect(set.decontamination?.excluded).toEqual([
      { name: 'aime24', reason: 'the set trained on (--bench)' },
    ]);
    expect(set.decontamination?.checkedAgainst).toEqual(['aime25', 'aime26', 'hmmt25', 'math500']);
    expect(set.problems.length + (set.decontamination?.removed.length ?? 0)).toBe(30);
    expect(set.problems.length).toBeGreaterThan(0);
    await writeDecontaminationRecord(folder, set);
    const record = JSON.parse(readFileSync(join(folder, DECONTAMINATION_FILE), 'utf8'));
    expect(record).toMatchObject({ trainedOnBenchmark: true, excluded: [{ name: 'aime24' }] });
  });

  it('refuses to decontaminate against nothing', async () => {
    await expect(
      loadRlProblems({ bench: 'aime24', seed: 0, decontaminate: true, decontaminateAgainst: ['aime24'] }),
    ).rejects.toMatchObject({ code: 'RL_DECONTAMINATION_UNAVAILABLE' });
    const data = writeJsonl('train.jsonl', [{ id: 'clean', problem: UNRELATED, answer: '19' }]);
    // An empty data folder: nothing found to check against.
    await expect(
      loadRlProblems({ data, dataDir: mkdtempSync(join(folder, 'empty-')), seed: 0, decontaminate: true }),
    ).rejects.toMatchObject({
      code: 'RL_DECONTAMINATION_UNAVAILABLE',
      message: expect.stringMatching(/none left in .*empty-/),
    });
  });
});

describe('rlProblemOrder', () => {
  const problems: RolloutProblem[] = Array.from({ length: 10 }, (_, index) => ({
    id: `p${index}`,
    text: `problem ${index}`,
    answer: String(index),
  }));
  const ids = (list: readonly RolloutProblem[]) => list.map((problem) => problem.id);

  it('takes every problem once per epoch, a fresh shuffle each epoch', () => {
    const order = ids(rlProblemOrder(problems, { seed: 3, count: 25 }));
    expect(order).toHaveLength(25);
    const epochs = [order.slice(0, 10), order.slice(10, 20), order.slice(20)];
    expect([...epochs[0]!].sort()).toEqual([...ids(problems)].sort());
    expect([...epochs[1]!].sort()).toEqual([...ids(problems)].sort());
    expect(new Set(epochs[2]).size).toBe(5);
    expect(epochs[0]).not.toEqual(ids(problems));
    expect(epochs[1]).not.toEqual(epochs[0]);
    expect(epochs[2]).not.toEqual(epochs[1]!.slice(0, 5));
  });

  it('is fixed by the seed', () => {
    expect(rlProblemOrder(problems, { seed: 7, count: 30 })).toEqual(
      rlProblemOrder(problems, { seed: 7, count: 30 }),
    );
    expect(ids(rlProblemOrder(problems, { seed: 7, count: 10 }))).not.toEqual(
      ids(rlProblemOrder(problems, { seed: 8, count: 10 })),
    );
    // A longer run starts with the shorter run's order.
    expect(rlProblemOrder(problems, { seed: 7, count: 13 })).toEqual(
      rlProblemOrder(problems, { seed: 7, count: 30 }).slice(0, 13),
    );
  });

  it('rejects a bad count and an empty set', () => {
    expect(rlProblemOrder(problems, { seed: 0, count: 0 })).toEqual([]);
    expect(() => rlProblemOrder(problems, { seed: 0, count: -1 })).toThrow(/whole number/);
    expect(() => rlProblemOrder([], { seed: 0, count: 1 })).toThrow(/no problems/);
  });
});

describe('writeDecontaminationRecord', () => {
  it('records a run with decontamination off, leaving no temporary file', async () => {
    const set: RlProblemSet = {
      name: 'train',
      source: { kind: 'data', path: '/x/train.jsonl' },
      loadedCount: 1,
      problems: [{ id: 'a', text: 't', answer: '1' }],
      decontamination: null,
    };
    await writeDecontaminationRecord(folder, set);
    expect(JSON.parse(readFileSync(join(folder, DECONTAMINATION_FILE), 'utf8'))).toEqual({
      name: 'train',
      source: { kind: 'data', path: '/x/train.jsonl' },
      trainedOnBenchmark: false,
      decontaminated: false,
      ngram: null,
      checkedAgainst: [],
      files: [],
      excluded: [],
      loaded: 1,
      kept: 1,
      removedCount: 0,
      removed: [],
    });
    expect(readdirSync(folder)).toEqual([DECONTAMINATION_FILE]);
  });
});
