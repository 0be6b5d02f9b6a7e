import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const cli = new URL('../bin/agentmath.js', import.meta.url).pathname;
const directory = mkdtempSync(join(tmpdir(), 'agentmath-grade-'));

afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('agentmath grade', () => {
  it('grades one pair', async () => {
    const { stdout } = await run(
      process.execPath,
      [cli, 'grade', '--no-sandbox', '--prediction', 'So \\boxed{025}.', '--reference', '25'],
      {
        timeout: 60_000,
      },
    );
    expect(JSON.parse(stdout)).toEqual({ correct: true, extracted: '025', reason: 'exact' });
  });

  it('grades a JSONL file in order, with an error line in place of a bad line', async () => {
    const input = join(directory, 'pairs.jsonl');
    writeFileSync(
      input,
      [
        JSON.stringify({ prediction: '\\boxed{(1,2]}', reference: '(1,2)' }),
        '{not json',
        JSON.stringify({ prediction: 'x', answer: 'y' }),
        JSON.stringify({ prediction: 'The final answer is 0.5', reference: '\\frac12' }),
      ].join('\n'),
    );
    const { stdout } = await run(process.execPath, [cli, 'grade', '--no-sandbox', '--input', input], {
      timeout: 60_000,
    });
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toEqual({ correct: false, extracted: '(1,2]', reason: 'mismatch' });
    expect(String(lines[1]!.error)).toMatch(/^line 2: not JSON/);
    expect(String(lines[2]!.error)).toMatch(/^line 3: field "reference"/);
    expect(lines[3]).toEqual({ correct: true, extracted: '0.5', reason: 'exact' });
  });

  it('refuses a missing reference with a clear message', async () => {
    await expect(
      run(process.execPath, [cli, 'grade', '--prediction', '5'], { timeout: 60_000 }),
    ).rejects.toMatchObject({
      stderr: expect.stringContaining('--prediction and --reference go together'),
    });
  });
});
