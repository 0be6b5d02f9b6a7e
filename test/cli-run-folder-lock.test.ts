/**
 * One writer per run folder through the CLI: `eval` and `synth run` refuse a folder
 * whose `run.lock` names a live process (exit 2, the holder named), before starting anything,
 * and take over a lock whose process is gone. (`rollout`: test/rollout-cli-checks.test.ts.)
 */
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processStartTime, RUN_LOCK_FILE } from '../src/shared/run-folder-lock.ts';
import { killAllClis, startCli } from './cli-process.ts';

let dir: string;
let bench: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'run-folder-lock-cli-'));
  bench = join(dir, 'bench.jsonl');
  await writeFile(bench, `${JSON.stringify({ id: 'a', problem: 'What is 1+1?', answer: '2' })}\n`);
});

afterAll(async () => {
  killAllClis();
  await rm(dir, { recursive: true, force: true });
});

async function lockedBy(folder: string, pid: number): Promise<void> {
  await mkdir(folder, { recursive: true });
  await writeFile(
    join(folder, RUN_LOCK_FILE),
    JSON.stringify({
      pid,
      startTime: processStartTime(pid),
      host: hostname(),
      command: 'eval',
      since: 'now',
    }),
  );
}

const evalArgs = (out: string) => [
  'eval',
  '--bench',
  bench,
  '--engine',
  'http://127.0.0.1:1',
  '--api',
  'openai',
  '--model',
  'm',
  '--sandbox-workers',
  '1',
  '--out',
  out,
];

describe('run folder lock through the CLI', () => {
  it('eval and synth run refuse a folder another live process writes, with exit 2', async () => {
    const evalOut = join(dir, 'eval-held');
    await lockedBy(evalOut, process.pid);
    const evaluated = await startCli(evalArgs(evalOut), { cwd: dir }).done;
    expect(evaluated.code).toBe(2);
    expect(evaluated.stderr).toMatch(new RegExp(`\\[RUN_FOLDER_LOCKED\\] .* \\(pid ${process.pid}`));
    const synthOut = join(dir, 'synth-held');
    await lockedBy(synthOut, process.pid);
    const synthesised = await startCli(
      [
        'synth',
        'run',
        '--input',
        bench,
        '--teacher',
        'http://127.0.0.1:1',
        '--model',
        'm',
        '--out',
        synthOut,
      ],
      { cwd: dir },
    ).done;
    expect(synthesised.code).toBe(2);
    expect(synthesised.stderr).toMatch(/RUN_FOLDER_LOCKED/);
  });

  it('eval takes over the lock of a process that is gone', async () => {
    const out = join(dir, 'eval-stale');
    const gone = Number(
      spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' })
        .stdout,
    );
    await lockedBy(out, gone);
    const result = await startCli(evalArgs(out), { cwd: dir, limitMs: 90_000 }).done;
    expect(result.stderr).not.toMatch(/RUN_FOLDER_LOCKED/);
    expect(result.code).toBe(1); // the engine is unreachable: the run itself went on
  }, 100_000);
});
