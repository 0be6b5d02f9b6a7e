/**
 * `agentmath synth run` as a careful user meets it, through the real CLI against a
 * scripted teacher: an outage (401 with the key echoed) is not a result — the run exits 1,
 * prints the cause with the key redacted, and `--resume` retries those records once the teacher
 * is fixed, with the request count matching what the server received; a BOM and `--input -`
 * are read; bad options exit 2 and leave nothing behind; a bad `--prompt` leaves no
 * `synth-run.json`; `--out FILE` and a folder holding other files are refused; SIGINT prints
 * the resume hint.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllClis, startCli } from './cli-process.ts';
import { type ScriptedTeacher, startScriptedTeacher } from './fixtures/scripted-teacher-server.ts';

const KEY = 'sk-test-secret-1234';
const rewrite =
  '<think>Multiply. <code>\nprint(123 * 456)\n</code>\n<interpreter>\n56088\n</interpreter>\nDone.</think>\nThe answer is \\boxed{56088}.';
const record = (id: string) =>
  JSON.stringify({
    id,
    problem: `[${id}] What is 123 * 456?`,
    solution: 'It is 56088. \\boxed{56088}',
    answer: '56088',
  });

let dir: string;
let input: string;
let server: ScriptedTeacher;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'synth-cli-checks-'));
  input = join(dir, 'input.jsonl');
  await writeFile(input, `${['a', 'b', 'c'].map(record).join('\n')}\n`);
  server = await startScriptedTeacher(() => rewrite);
});

afterAll(async () => {
  killAllClis();
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

const args = (out: string, extra: string[] = [], source = input) => [
  'synth',
  'run',
  '--input',
  source,
  '--teacher',
  server.url,
  '--model',
  'scripted',
  '--out',
  out,
  '--stages',
  'format,answer',
  ...extra,
];
const run = (list: string[], env: NodeJS.ProcessEnv = {}) =>
  startCli(list, { cwd: dir, limitMs: 90_000, env: { OPENAI_API_KEY: KEY, ...env } }).done;
const lines = async (file: string) =>
  (await readFile(file, 'utf8'))
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('synth run: outages are not results', () => {
  it('exits 1 with the cause (key redacted) when the teacher refuses, and --resume retries once fixed', async () => {
    const out = join(dir, 'outage');
    server.faultFor = () => ({ kind: '401' });
    const before = server.requests.length;
    const first = await run(args(out));
    expect(first.code).toBe(1);
    expect(first.stderr).toMatch(/3 of 3 records were lost to an outage/);
    expect(first.stderr).toMatch(/HTTP 401: .*Incorrect API key provided: Bearer \*\*\*/);
    expect(first.stderr + first.stdout).not.toContain(KEY);
    expect(first.stderr).toMatch(/--resume --out /);
    expect((await lines(join(out, 'records.jsonl'))).map((line) => line.status)).toEqual([
      'outage',
      'outage',
      'outage',
    ]);

    server.faultFor = () => null;
    const second = await run([...args(out), '--resume']);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/0 already done/);
    expect(second.stdout).toMatch(/kept 3 of 3 records/);
    const stats = JSON.parse(await readFile(join(out, 'stats.json'), 'utf8')) as {
      kept: number;
      outages: { count: number };
      teacher: { requests: number; failed: number };
    };
    expect(stats.kept).toBe(3);
    expect(stats.outages.count).toBe(0);
    expect(stats.teacher.failed).toBe(3);
    expect(stats.teacher.requests).toBe(server.requests.length - before);
  }, 120_000);
});

describe('synth run: inputs', () => {
  it('reads a first record behind a UTF-8 byte-order mark', async () => {
    const bom = join(dir, 'bom.jsonl');
    await writeFile(bom, `\uFEFF${record('first')}\n${record('second')}\n`);
    const result = await run(args(join(dir, 'bom'), [], bom));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/kept 2 of 2 records \(0 input rows skipped\)/);
  }, 60_000);

  it('reads --input - from standard input', async () => {
    const out = join(dir, 'stdin');
    const child = spawn(
      process.execPath,
      [fileURLToPath(new URL('../bin/agentmath.js', import.meta.url)), ...args(out, [], '-')],
      { cwd: dir, env: { ...process.env, OPENAI_API_KEY: KEY }, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stdin.end(`${record('piped')}\n`);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(stdout).toMatch(/kept 1 of 1 records/);
  }, 60_000);
});

describe('synth run: the command line', () => {
  it('exits 2 on bad option values before writing anything', async () => {
    const cases: [string[], RegExp][] = [
      [['--concurrency', '0'], /--concurrency/],
      [['--limit', '0'], /--limit/],
      [['--ngram', '0'], /--ngram/],
      [['--on-mismatch', 'foo'], /--on-mismatch/],
      [['--fields', 'bogus=x'], /--fields/],
    ];
    for (const [extra, message] of cases) {
      const out = join(dir, `bad-${extra.join('')}`);
      const result = await run(args(out, extra));
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(existsSync(out)).toBe(false);
    }
    const badUrl = args(join(dir, 'bad-url'));
    badUrl[badUrl.indexOf('--teacher') + 1] = 'not-a-url';
    const url = await run(badUrl);
    expect(url.code).toBe(2);
    expect(url.stderr).toMatch(/--teacher .* expected an http:\/\/ or https:\/\/ URL/);
  });

  it('refuses --out naming a file, and a folder holding other files, without touching them', async () => {
    const file = await run(args(input));
    expect(file.code).toBe(2);
    expect(file.stderr).toMatch(/--out .*input\.jsonl is a file/);
    const foreign = join(dir, 'foreign');
    await mkdir(foreign);
    await writeFile(join(foreign, 'trajectories.jsonl'), 'theirs\n');
    const refused = await run(args(foreign));
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/trajectories\.jsonl/);
    expect(await readFile(join(foreign, 'trajectories.jsonl'), 'utf8')).toBe('theirs\n');
  });

  it('leaves no synth-run.json after a bad --prompt or a missing --decontaminate file, so a rerun works', async () => {
    const out = join(dir, 'prompt');
    const prompt = await run(args(out, ['--prompt', join(dir, 'missing.md')]));
    expect(prompt.code).toBe(1);
    expect(prompt.stderr).toMatch(/missing\.md does not exist/);
    const decontaminate = await run(args(out, ['--decontaminate', join(dir, 'missing.jsonl')]));
    expect(decontaminate.code).toBe(1);
    expect(existsSync(join(out, 'synth-run.json'))).toBe(false);
    const rerun = await run(args(out));
    expect(rerun.code, rerun.stderr).toBe(0);
  }, 60_000);

  it('refuses a resume with other defining options with exit 2 (run identity)', async () => {
    const out = join(dir, 'identity');
    expect((await run(args(out))).code).toBe(0);
    const changed = await run([...args(out, ['--resume']), '--ngram', '5']);
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(/RUN_IDENTITY_MISMATCH.*\n.*ngram: saved 8, now 5/);
  }, 60_000);

  it('prints how to resume when stopped by SIGINT, and releases the run folder', async () => {
    const out = join(dir, 'interrupted');
    server.delayMs = 60_000;
    try {
      const { child, done } = startCli(args(out), {
        cwd: dir,
        limitMs: 60_000,
        env: { OPENAI_API_KEY: KEY },
      });
      for (let tries = 0; tries < 200 && !existsSync(join(out, 'synth-run.json')); tries++) await sleep(50);
      await sleep(300);
      process.kill(child.pid!, 'SIGINT');
      const end = await done;
      expect(end.signal).toBe('SIGINT');
      expect(end.stderr).toMatch(/continue with --resume --out/);
      expect(readdirSync(out)).not.toContain('run.lock');
    } finally {
      server.delayMs = 0;
    }
  }, 90_000);
});
