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
    // Invalid lines make the status 1, after every line was graded or reported.
    const failed = await run(process.execPath, [cli, 'grade', '--no-sandbox', '--input', input], {
      timeout: 60_000,
    }).then(
      () => null,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toContain('agentmath grade: 2 bad line(s)');
    const lines = failed!.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toEqual({ correct: false, extracted: '(1,2]', reason: 'mismatch' });
    expect(String(lines[1]!.error)).toMatch(/^line 2: not JSON/);
    expect(String(lines[2]!.error)).toMatch(/^line 3: field "reference"/);
    expect(lines[3]).toEqual({ correct: true, extracted: '0.5', reason: 'exact' });
  });

  it('reads standard input for --input - and accepts a byte-order mark; all valid: status 0', async () => {
    const pairs = [
      JSON.stringify({ prediction: '\\boxed{4}', reference: '4' }),
      JSON.stringify({ prediction: '\\boxed{5}', reference: '4' }),
    ];
    const child = execFile(process.execPath, [cli, 'grade', '--no-sandbox', '--input', '-'], {
      timeout: 60_000,
    });
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stdin!.end(`\uFEFF${pairs.join('\r\n')}\r\n`);
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(
      stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).correct),
    ).toEqual([true, false]);
  });

  it('refuses a missing reference with a clear message', async () => {
    await expect(
      run(process.execPath, [cli, 'grade', '--prediction', '5'], { timeout: 60_000 }),
    ).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--prediction and --reference go together'),
    });
  });
});
