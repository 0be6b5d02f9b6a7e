/**
 * The Math-Verify backend through `agentmath grade --grader math-verify`, in the real jailed
 * sandbox: pairs from standard input and from a file, an answer that breaks Math-Verify (wrong,
 * not an outage), one past the time limit (`timeout`, wrong), an unreachable sandbox (no
 * verdict, exit 3), and `--no-sandbox` refused. Skipped, with the reason, only when the jail's
 * environment lacks math-verify (`bash scripts/setup.sh` installs it).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { gradeWithMathVerify } from '../src/grader/index.ts';
import { mathVerifySkipReason } from './grader-sandbox.ts';

const cli = new URL('../bin/agentmath.js', import.meta.url).pathname;
const directory = mkdtempSync(join(tmpdir(), 'agentmath-grade-math-verify-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

type CliResult = { code: number; stdout: string; stderr: string };

/** Runs the CLI with `input` on standard input; resolves with its status and output. */
function grade(args: string[], input = ''): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [cli, 'grade', ...args],
      { timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : ((error as { code?: number }).code ?? -1), stdout, stderr }),
    );
    child.stdin?.end(input);
  });
}

const lines = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

it('without a sandbox, Math-Verify gives no verdict rather than a wrong one', async () => {
  expect(await gradeWithMathVerify('\\boxed{1}', '1')).toMatchObject({
    correct: null,
    reason: 'grader-unavailable',
  });
});

const missing = mathVerifySkipReason();
if (missing !== null) process.stderr.write(`grader-math-verify: skipped: ${missing}\n`);

describe.skipIf(missing !== null)('agentmath grade --grader math-verify', () => {
  it('grades JSONL from standard input in the jail; text that breaks the checker or runs too long is wrong', async () => {
    const pairs = [
      { prediction: 'So the answer is $\\boxed{\\frac{1}{2}}$.', reference: '0.5' },
      { prediction: '\\boxed{3} papers and \\boxed{5} bins', reference: '3, 5' },
      { prediction: 'The answer is $\\boxed{7}$', reference: '8' },
      { prediction: '\\boxed{\\frac{', reference: '1' },
      { prediction: '\\boxed{2^{2^{2^{2^{2^{100}}}}}}', reference: '1' },
    ];
    const result = await grade(
      ['--grader', 'math-verify', '--timeout-ms', '3000', '--input', '-'],
      pairs.map((pair) => JSON.stringify(pair)).join('\n'),
    );
    expect(result.code).toBe(0);
    const graded = lines(result.stdout);
    expect(graded.map((line) => line.correct)).toEqual([true, true, false, false, false]);
    expect(graded[0]).toMatchObject({ reason: 'math-verify', extracted: '\\frac{1}{2}' });
    expect(graded[2]).toMatchObject({ reason: 'mismatch' });
    expect(graded[4]).toMatchObject({ reason: 'timeout' });
  });

  it('grades a file and one pair', async () => {
    const input = join(directory, 'pairs.jsonl');
    writeFileSync(
      input,
      `${JSON.stringify({ prediction: '**Answer:** $\\sqrt{8}$', reference: '2\\sqrt{2}' })}\n`,
    );
    const fromFile = await grade(['--grader', 'math-verify', '--input', input]);
    expect(fromFile.code).toBe(0);
    expect(lines(fromFile.stdout)).toEqual([
      expect.objectContaining({ correct: true, reason: 'math-verify' }),
    ]);
    const single = await grade(['--grader', 'math-verify', '--prediction', '\\frac12', '--reference', '0.5']);
    expect(lines(single.stdout)).toEqual([expect.objectContaining({ correct: true })]);
  });

  it('an unreachable sandbox is no verdict and exit 3; --no-sandbox is refused', async () => {
    const down = await grade([
      '--grader',
      'math-verify',
      '--sandbox',
      'http://127.0.0.1:1',
      '--prediction',
      '\\boxed{1}',
      '--reference',
      '1',
    ]);
    expect(down.code).toBe(3);
    expect(lines(down.stdout)[0]).toMatchObject({ correct: null, reason: 'grader-unavailable' });
    expect(down.stderr).toMatch(/1 grade\(s\) without a verdict/);
    const refused = await grade([
      '--grader',
      'math-verify',
      '--no-sandbox',
      '--prediction',
      '1',
      '--reference',
      '1',
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/cannot be used with --no-sandbox/);
  });
});
