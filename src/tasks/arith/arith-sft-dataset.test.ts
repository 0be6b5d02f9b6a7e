import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { taskSolutionSchema } from '../task-solution-schema.ts';
import {
  ArithDatasetFileError,
  type ArithDatasetProgress,
  writeArithSftDataset,
} from './arith-sft-dataset.ts';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'agentmath-arith-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

const readRecords = async (file: string) =>
  (await readFile(file, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => taskSolutionSchema.parse(JSON.parse(line)));

describe('writeArithSftDataset (text style)', () => {
  it('writes one valid record per problem and reports progress', async () => {
    const out = join(directory, 'text.jsonl');
    const progress: ArithDatasetProgress[] = [];
    const summary = await writeArithSftDataset({
      out,
      count: 24,
      seed: 3,
      style: 'text',
      onProgress: (event) => progress.push(event),
    });
    expect(summary).toMatchObject({ total: 24, resumed: 0, written: 24, skipped: [] });
    const records = await readRecords(out);
    expect(records).toHaveLength(24);
    expect(new Set(records.map((record) => record.problem.id)).size).toBe(24);
    expect(records.every((record) => record.style === 'text')).toBe(true);
    expect(progress.map((event) => event.written)).toEqual(
      Array.from({ length: 24 }, (_, index) => index + 1),
    );
  });

  it('resumes: a second run skips written ids and cuts a torn last line', async () => {
    const out = join(directory, 'resume.jsonl');
    await writeArithSftDataset({ out, count: 10, seed: 5, style: 'text' });
    const firstTen = await readFile(out, 'utf8');
    await appendFile(out, '{"problem": {"id": "arith-pro'); // a crash mid-write
    const summary = await writeArithSftDataset({ out, count: 16, seed: 5, style: 'text' });
    expect(summary).toMatchObject({ total: 16, resumed: 10, written: 6 });
    const content = await readFile(out, 'utf8');
    expect(content.startsWith(firstTen)).toBe(true);
    const records = await readRecords(out);
    expect(records).toHaveLength(16);
    expect(new Set(records.map((record) => record.problem.id)).size).toBe(16);
    const again = await writeArithSftDataset({ out, count: 16, seed: 5, style: 'text' });
    expect(again).toMatchObject({ resumed: 16, written: 0 });
  });

  it('skips records longer than maxBytes, saying so', async () => {
    const out = join(directory, 'short.jsonl');
    const summary = await writeArithSftDataset({ out, count: 16, seed: 1, style: 'text', maxBytes: 300 });
    expect(summary.skipped.length).toBeGreaterThan(0);
    expect(summary.skipped.every((skip) => skip.reason === 'too-long')).toBe(true);
    expect(summary.written + summary.skipped.length).toBe(16);
    for (const record of await readRecords(out)) {
      const bytes =
        Buffer.byteLength(record.problem.problem) +
        record.segments.reduce((sum, segment) => sum + Buffer.byteLength(segment.text), 0);
      expect(bytes).toBeLessThanOrEqual(300);
    }
  });

  it('refuses to resume a file with a bad line or another style, naming the line', async () => {
    const out = join(directory, 'bad.jsonl');
    await writeArithSftDataset({ out, count: 2, seed: 1, style: 'text' });
    await appendFile(out, '{"not": "a record"}\n');
    await expect(writeArithSftDataset({ out, count: 4, seed: 1, style: 'text' })).rejects.toThrow(
      /bad\.jsonl line 3/,
    );
    const other = join(directory, 'other.jsonl');
    const [line] = (await readFile(out, 'utf8')).split('\n');
    await writeFile(other, `${line!.replace('"style":"text"', '"style":"tool"')}\n`);
    await expect(writeArithSftDataset({ out: other, count: 2, seed: 1, style: 'text' })).rejects.toThrow(
      ArithDatasetFileError,
    );
  });
});
