import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readSftDataFile } from './sft-data-file.ts';

const folder = mkdtempSync(join(tmpdir(), 'agentmath-sft-data-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const record = {
  problem: { id: 'arith-sum-1', family: 'arith', level: 0, problem: 'Compute 2 + 3.', answer: '5' },
  style: 'tool',
  segments: [
    { kind: 'model', text: '<code>\nprint(2 + 3)\n</code>' },
    { kind: 'tool', text: '\n<interpreter>\n5\n</interpreter>\n' },
    { kind: 'model', text: 'The answer is \\boxed{5}.' },
  ],
};

describe('readSftDataFile on a task-solution JSONL (tasks write-arith)', () => {
  it('reads the records as they are, the interpreter output masked unless asked', async () => {
    const file = join(folder, 'solutions.jsonl');
    writeFileSync(file, `${JSON.stringify(record)}\n\n${JSON.stringify({ ...record, style: 'text' })}\n`);
    const solutions = await readSftDataFile(file);
    expect(solutions).toHaveLength(2);
    expect(solutions[0]).toEqual(record);
    const unmasked = await readSftDataFile(file, { maskToolOutput: false });
    expect(unmasked[0]?.segments.map((segment) => segment.kind)).toEqual(['model', 'model', 'model']);
    expect(unmasked[0]?.problem).toEqual(record.problem);
  });

  it('names the file, the line and the field of a malformed record', async () => {
    const file = join(folder, 'bad.jsonl');
    writeFileSync(file, `${JSON.stringify(record)}\n${JSON.stringify({ ...record, segments: [] })}\n`);
    await expect(readSftDataFile(file)).rejects.toThrow(/bad\.jsonl line 2: .*field "segments"/);
  });
});

describe('readSftDataFile and a UTF-8 byte-order mark', () => {
  it('reads a JSONL and a ShareGPT file that start with one (editors on Windows write it)', async () => {
    const jsonl = join(folder, 'bom.jsonl');
    writeFileSync(jsonl, `\uFEFF${JSON.stringify(record)}\n${JSON.stringify(record)}\n`);
    expect(await readSftDataFile(jsonl)).toEqual([record, record]);
    const sharegpt = join(folder, 'bom-sharegpt.json');
    const conversations = [
      { from: 'human', value: 'Compute 2 + 3.' },
      { from: 'gpt', value: 'The answer is \\boxed{5}.' },
    ];
    writeFileSync(sharegpt, `\uFEFF${JSON.stringify([{ id: 'a', conversations }])}`);
    const [solution] = await readSftDataFile(sharegpt);
    expect(solution?.problem.problem).toBe('Compute 2 + 3.');
  });
});
