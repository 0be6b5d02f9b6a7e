import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { arithBenchmark, arithTrainProblems } from '../src/tasks/index.ts';

const run = promisify(execFile);
const cli = new URL('../bin/agentmath.js', import.meta.url).pathname;
const directory = mkdtempSync(join(tmpdir(), 'agentmath-tasks-cli-'));

afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('agentmath tasks', () => {
  it('prints the eval split as JSON lines, equal to the benchmark', async () => {
    const { stdout } = await run(
      process.execPath,
      [cli, 'tasks', 'arith', '--split', 'eval', '--count', '12', '--json'],
      {
        timeout: 60_000,
      },
    );
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toEqual(arithBenchmark({ count: 12 }));
  });

  it('draws the spaced level 5 and refuses a level above it', async () => {
    const { stdout } = await run(
      process.execPath,
      [cli, 'tasks', 'arith', '--split', 'eval', '--count', '8', '--levels', '5', '--json'],
      { timeout: 60_000 },
    );
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(8);
    for (const line of lines) {
      expect(line.level).toBe(5);
      expect(line.problem).toMatch(/\d \d{3}\b/);
    }
    await expect(
      run(process.execPath, [cli, 'tasks', 'arith', '--levels', '6'], { timeout: 60_000 }),
    ).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining("'--levels <list>'") });
  });

  it('rejects an unknown kind, naming the option', async () => {
    await expect(
      run(process.execPath, [cli, 'tasks', 'arith', '--kinds', 'division'], { timeout: 60_000 }),
    ).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining(
        "option '--kinds <list>' argument 'division' is invalid. expected one of product,",
      ),
    });
  });

  it('refuses --out naming a folder or a file it did not write (exit 2), changing nothing', async () => {
    const write = (out: string) =>
      run(process.execPath, [cli, 'tasks', 'write-arith', '--out', out, '--count', '2'], { timeout: 60_000 });
    await expect(write(directory)).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining(
        `--out ${directory} is a folder; give the JSONL file to write or resume`,
      ),
    });
    const foreign = join(directory, 'mine.jsonl');
    const lines = `${Array.from({ length: 30 }, (_, index) => JSON.stringify({ line: index })).join('\n')}\n{"torn": tr`;
    writeFileSync(foreign, lines);
    const refused = await write(foreign).catch((error: { code: number; stderr: string }) => error);
    expect(refused).toMatchObject({ code: 2 });
    const stderr = (refused as { stderr: string }).stderr;
    expect(stderr).toContain(
      `[RUN_FOLDER_REFUSED] ${foreign} line 1: not an arith solution record (field "problem": `,
    );
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(readFileSync(foreign, 'utf8')).toBe(lines);
  });

  it('writes a tool-style dataset through the jailed sandbox, then resumes it', async () => {
    const out = join(directory, 'tool.jsonl');
    const options = [
      'tasks',
      'write-arith',
      '--out',
      out,
      '--style',
      'tool',
      '--seed',
      '4',
      '--levels',
      '1,2',
    ];
    const first = await run(process.execPath, [cli, ...options, '--count', '10'], { timeout: 120_000 });
    expect(first.stdout).toContain('10 written, 0 skipped');
    const second = await run(process.execPath, [cli, ...options, '--count', '14'], { timeout: 120_000 });
    expect(second.stdout).toContain('10 already there, 4 written');
    const records = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const answers = new Map(
      arithTrainProblems({ seed: '4', count: 14, levels: [1, 2] }).map((p) => [p.id, p.answer]),
    );
    expect(records).toHaveLength(14);
    for (const record of records) {
      expect(record.segments[1].text).toBe(
        `\n<interpreter>\n${answers.get(record.problem.id)}\n</interpreter>\n`,
      );
    }
  });
});
