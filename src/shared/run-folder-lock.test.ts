import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireRunFolderLock, processStartTime, RUN_LOCK_FILE } from './run-folder-lock.ts';

const root = mkdtempSync(join(tmpdir(), 'run-folder-lock-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A pid that certainly ran and ended: a child that exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  return Number(child.stdout);
}

const writeLock = (folder: string, owner: Record<string, unknown>) =>
  writeFileSync(
    join(folder, RUN_LOCK_FILE),
    JSON.stringify({ host: hostname(), command: 'rollout', since: 'earlier', ...owner }),
  );

describe('acquireRunFolderLock', () => {
  it('writes the pid and start time, refuses a second taker while held, and frees the folder on release', async () => {
    const folder = join(root, 'held');
    const release = await acquireRunFolderLock(folder, { command: 'rollout' });
    const owner = JSON.parse(readFileSync(join(folder, RUN_LOCK_FILE), 'utf8'));
    expect(owner).toMatchObject({ pid: process.pid, startTime: processStartTime(process.pid) });
    // A live holder that is another process: the parent of this test runner.
    writeLock(folder, { pid: process.ppid, startTime: processStartTime(process.ppid) });
    await expect(acquireRunFolderLock(folder, { command: 'synth run' })).rejects.toMatchObject({
      code: 'RUN_FOLDER_LOCKED',
      message: expect.stringMatching(/is in use by `agentmath rollout` \(pid \d+/),
    });
    await release();
    expect(existsSync(join(folder, RUN_LOCK_FILE))).toBe(false);
  });

  it('takes over a lock whose process is gone (kill -9) or whose pid now names another process', async () => {
    const folder = join(root, 'stale');
    await (await acquireRunFolderLock(folder, { command: 'rollout' }))();
    writeLock(folder, { pid: deadPid(), startTime: '1' });
    const release = await acquireRunFolderLock(folder, { command: 'rollout' });
    await release();
    // The pid is alive but started at another time: a reused pid, not the writer.
    writeLock(folder, { pid: process.ppid, startTime: 'not-its-start-time' });
    const again = await acquireRunFolderLock(folder, { command: 'rollout' });
    expect(JSON.parse(readFileSync(join(folder, RUN_LOCK_FILE), 'utf8')).pid).toBe(process.pid);
    await again();
  });

  it('takes over a lock whose process is a zombie (killed, not yet reaped by its parent)', async () => {
    const folder = join(root, 'zombie');
    await (await acquireRunFolderLock(folder, { command: 'rollout' }))();
    // `sleep 0.1` ends under a parent that never waits for it (sh exec'd into `sleep 30`).
    const parent = spawn('sh', ['-c', 'sleep 0.1 & echo $!; exec sleep 30'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      const [line] = await once(parent.stdout, 'data');
      const zombie = Number(String(line).trim());
      const state = () => readFileSync(`/proc/${zombie}/stat`, 'utf8').split(') ')[1]?.[0];
      while (state() !== 'Z') await sleep(20);
      writeLock(folder, { pid: zombie, startTime: processStartTime(zombie) });
      const release = await acquireRunFolderLock(folder, { command: 'eval' });
      expect(JSON.parse(readFileSync(join(folder, RUN_LOCK_FILE), 'utf8')).pid).toBe(process.pid);
      await release();
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('takes over a torn lock file (a kill mid-write)', async () => {
    const folder = join(root, 'torn');
    await (await acquireRunFolderLock(folder, { command: 'rollout' }))();
    writeFileSync(join(folder, RUN_LOCK_FILE), '{"pid":');
    await (await acquireRunFolderLock(folder, { command: 'rollout' }))();
  });
});
