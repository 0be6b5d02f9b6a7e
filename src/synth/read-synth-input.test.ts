import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { parseFieldMapping, readSynthInput } from './read-synth-input.ts';

describe('synthesis input', () => {
  it('maps fields, reads HF messages, and reports bad rows by file, line and field', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'synth-input-'));
    const file = join(dir, 'in.jsonl');
    const rows = [
      JSON.stringify({ uid: 'a', question: 'What is 2+2?', cot: 'It is 4. \\boxed{4}', gt: 4 }),
      '{"uid": "b", "question": ',
      JSON.stringify({ uid: 'c', question: 'Q?' }),
      JSON.stringify({
        uid: 'd',
        messages: [
          { role: 'user', content: 'Hi?' },
          { role: 'assistant', content: 'Hello. \\boxed{1}' },
        ],
      }),
      JSON.stringify({ uid: 'a', question: 'dup', cot: 'dup' }),
    ];
    await writeFile(file, `${rows.join('\n')}\n`);
    const input = await readSynthInput(
      file,
      parseFieldMapping('id=uid,problem=question,solution=cot,answer=gt'),
    );
    expect(input.records).toEqual([
      { id: 'a', problem: 'What is 2+2?', solution: 'It is 4. \\boxed{4}', answer: '4' },
      { id: 'd', problem: 'Hi?', solution: 'Hello. \\boxed{1}', answer: null },
    ]);
    expect(input.skipped).toEqual([
      { file, line: 2, field: null, message: expect.stringContaining('not valid JSON') },
      { file, line: 3, field: 'cot', message: 'missing or empty text' },
      { file, line: 5, field: 'uid', message: 'duplicate id "a"' },
    ]);
  });

  it('reads Parquet rows', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'synth-input-'));
    const file = join(dir, 'in.parquet');
    const buffer = parquetWriteBuffer({
      columnData: [
        { name: 'id', data: ['p1', 'p2'], type: 'STRING' },
        { name: 'problem', data: ['One?', 'Two?'], type: 'STRING' },
        { name: 'solution', data: ['1', ''], type: 'STRING' },
      ],
    });
    await writeFile(file, new Uint8Array(buffer));
    const input = await readSynthInput(file);
    expect(input.records.map((record) => record.id)).toEqual(['p1']);
    expect(input.skipped).toEqual([{ file, line: 2, field: 'solution', message: 'missing or empty text' }]);
  });

  it('rejects a malformed --fields mapping by name', () => {
    expect(() => parseFieldMapping('question=q')).toThrow(/--fields: "question=q"/);
  });
});
