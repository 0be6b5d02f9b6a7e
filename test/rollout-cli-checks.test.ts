/**
 * `agentmath rollout` as a careful user meets it: an `--out` holding another job's
 * files is refused and left as it was; `--resume` needs a run; bad options exit 2 before
 * anything is written; an engine that never answers is cut by `--engine-timeout-ms`; a run
 * whose every trajectory failed exits 1 with the cause; SIGINT stops the sandbox's jails too;
 * a second writer on the same folder is refused while a stale lock (kill -9) is taken over.
 * Engines are scripted SGLang servers; no model is trained here.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createByteLevelTokenizer, writeByteLevelTokenizerFiles } from '../src/engine/index.ts';
import { startScriptedSglangServer } from './agent-fixtures.ts';
import { killAllClis, killGroup, startCli } from './cli-process.ts';
import { alive, descendantsOf } from './process-tree.ts';

let folder: string;
let bench: string;
let tokenizer: string;
let hung: Awaited<ReturnType<typeof startScriptedSglangServer>>;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'agentmath-rollout-checks-'));
  bench = join(folder, 'one.jsonl');
  writeFileSync(bench, `${JSON.stringify({ id: 'a', problem: 'What is 1+1?', answer: '2' })}\n`);
  tokenizer = join(folder, 'tokenizer');
  await writeByteLevelTokenizerFiles(tokenizer);
  hung = await startScriptedSglangServer({
    tokenizer: createByteLevelTokenizer(),
    model: { parts: ['never sent'] },
    behaviour: () => 'hang',
  });
});

afterAll(async () => {
  killAllClis();
  await hung.close();
  rmSync(folder, { recursive: true, force: true });
});

const run = (args: string[], limitMs = 60_000) => startCli(args, { cwd: folder, limitMs }).done;
const rollout = (out: string, engine: string, extra: string[] = []) => [
  'rollout',
  '--bench',
  bench,
  '--engine',
  engine,
  '--tokenizer',
  tokenizer,
  '--steps',
  '1',
  '--group-size',
  '2',
  '--batch-size',
  '1',
  '--sandbox-workers',
  '1',
  '--out',
  out,
  ...extra,
];

describe('agentmath rollout: the run folder', () => {
  it('refuses an --out holding another job’s trajectories.jsonl, with or without --resume, and leaves it whole', async () => {
    const out = join(folder, 'foreign');
    await mkdir(out);
    const foreign = `${Array.from({ length: 200 }, (_, index) => JSON.stringify({ line: index })).join('\n')}\n`;
    writeFileSync(join(out, 'trajectories.jsonl'), foreign);
    for (const extra of [[], ['--resume']]) {
      const result = await run(rollout(out, 'http://127.0.0.1:1', extra));
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/\[RUN_FOLDER_REFUSED\] .*trajectories\.jsonl/);
      expect(readFileSync(join(out, 'trajectories.jsonl'), 'utf8')).toBe(foreign);
      expect(existsSync(join(out, 'config.json'))).toBe(false);
    }
  });

  it('refuses --resume where there is no run, and --out naming a file, writing nothing', async () => {
    const missing = join(folder, 'never-started');
    const resumed = await run(rollout(missing, 'http://127.0.0.1:1', ['--resume']));
    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toMatch(/no `agentmath rollout` run to resume/);
    expect(existsSync(missing)).toBe(false);
    const file = await run(rollout(bench, 'http://127.0.0.1:1'));
    expect(file.code).toBe(2);
    expect(file.stderr).toMatch(/--out .*one\.jsonl is a file/);
    expect(file.stderr).not.toMatch(/EEXIST/);
  });

  it('exits 2 on bad options before writing anything: --tail-cut alone or out of range, --temperature -1, --group-size 1, --engine not-a-url', async () => {
    const cases: [string[], RegExp][] = [
      [['--tail-cut', '0.5'], /--tail-cut needs --kv-budget-tokens/],
      [['--kv-budget-tokens', '1000', '--tail-cut', '1.5'], /--tail-cut must be a fraction/],
      [['--temperature', '-1'], /--temperature/],
      [['--group-size', '1'], /--group-size/],
      [['--engine', 'not-a-url'], /--engine <url...>' argument 'not-a-url' is invalid/],
    ];
    for (const [extra, message] of cases) {
      const out = join(folder, `bad-${extra.join('')}`);
      const result = await run([...rollout(out, 'http://127.0.0.1:1'), ...extra]);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(existsSync(out)).toBe(false);
    }
  });

  it('exits 1 with the cause when every trajectory failed on the engine', async () => {
    const result = await run(rollout(join(folder, 'refused'), 'http://127.0.0.1:1'));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/2 of 2 trajectories ended in an engine or sandbox error/);
    expect(result.stderr).toMatch(/ENGINE_FAILED.*unreachable/);
  });

  it('takes --engine-timeout-ms: an engine that never answers fails the request in that time (exit 1)', async () => {
    const result = await run(rollout(join(folder, 'hung'), hung.url, ['--engine-timeout-ms', '300']), 90_000);
    expect(result.signal).toBeNull();
    expect(result.code).toBe(1);
    // Without the option each request would wait 600 s × 3 and the limit above would kill it.
    expect(result.stderr).toMatch(/2 of 2 trajectories ended in an engine or sandbox error/);
    expect(hung.calls()).toBeGreaterThan(0);
  }, 100_000);
});

describe('agentmath rollout: processes and writers', () => {
  it('SIGINT to the launcher stops every child (sandbox launcher and jails) and re-raises', async () => {
    const out = join(folder, 'interrupted');
    const { child, done } = startCli(rollout(out, hung.url, ['--sandbox-workers', '2']), {
      cwd: folder,
      limitMs: 60_000,
    });
    let tree: number[] = [];
    for (let tries = 0; tries < 200 && !existsSync(join(out, 'config.json')); tries++) await sleep(50);
    for (let tries = 0; tries < 100; tries++) {
      tree = descendantsOf(child.pid!);
      if (tree.length >= 3) break; // the real process, the sandbox launcher, a warm jail
      await sleep(100);
    }
    expect(tree.length).toBeGreaterThanOrEqual(3);
    process.kill(child.pid!, 'SIGINT');
    const end = await done;
    expect(end.signal).toBe('SIGINT');
    expect(end.stderr).toMatch(/resume with --resume --out/);
    const deadline = Date.now() + 15_000;
    while (alive(tree).length > 0 && Date.now() < deadline) await sleep(100);
    expect(alive(tree)).toEqual([]);
    expect(existsSync(join(out, 'run.lock'))).toBe(false);
  }, 90_000);

  it('refuses a second writer on the same folder (exit 2), and takes over the lock of a killed one', async () => {
    const out = join(folder, 'locked');
    const first = startCli(rollout(out, hung.url), { cwd: folder, limitMs: 60_000 });
    for (let tries = 0; tries < 200 && !existsSync(join(out, 'run.lock')); tries++) await sleep(50);
    const second = await run(rollout(out, hung.url, ['--resume']));
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/\[RUN_FOLDER_LOCKED\] .* is in use by `agentmath rollout` \(pid \d+/);
    killGroup(first.child); // kill -9: the lock stays behind
    await first.done;
    expect(existsSync(join(out, 'run.lock'))).toBe(true);
    const resumed = await run(rollout(out, 'http://127.0.0.1:1', ['--resume']));
    expect(resumed.stderr).not.toMatch(/RUN_FOLDER_LOCKED/);
    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toMatch(/RUN_IDENTITY_MISMATCH/); // another engine: another run
    const same = await run(rollout(out, hung.url, ['--resume', '--engine-timeout-ms', '200']), 90_000);
    expect(same.stderr).not.toMatch(/RUN_FOLDER_LOCKED/);
    expect(same.code).toBe(1); // the hung engine's requests fail in time; the run itself went on
    expect(existsSync(join(out, 'run.lock'))).toBe(false);
  }, 150_000);
});
