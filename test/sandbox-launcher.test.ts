/**
 * The local pool starts its jails through the launcher helper: the Node process forks no jail
 * itself, and when the helper dies the sessions report it and go on in fresh workers.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalSandbox, type LocalSandboxPool } from '../src/sandbox/index.ts';
import { processesOf } from './sandbox-processes.ts';

function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** Pids of this process's children that run the launcher helper. */
function launcherPids(): number[] {
  const text = readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').trim();
  const children = text ? text.split(/\s+/).map(Number) : [];
  return children.filter((pid) => commandLineOf(pid).includes('agentmath_sandbox/launcher.py'));
}

describe('local pool launcher', () => {
  let pool: LocalSandboxPool;
  beforeAll(async () => {
    pool = createLocalSandbox({ preload: [], warmWorkers: 2, maxWorkers: 4 }, { log: () => {} });
    await pool.ready();
  });
  afterAll(async () => {
    await pool.close();
  });

  it('starts every jail from the helper, never as a child of the Node process', async () => {
    const session = await pool.openSession();
    expect(await session.execute('print(1)')).toMatchObject({ status: 'ok', stdout: '1\n' });
    const helpers = launcherPids();
    expect(helpers).toHaveLength(1);
    const jailed = new Set(processesOf(pool.workerUids()));
    expect(jailed.size).toBeGreaterThanOrEqual(3);
    for (const pid of jailed) {
      let ancestor = parentOf(pid);
      while (ancestor !== null && jailed.has(ancestor)) ancestor = parentOf(ancestor);
      expect(ancestor).toBe(helpers[0]);
    }
    await session.close();
  });

  it('reports the loss of the helper to open sessions and goes on in fresh workers', async () => {
    const session = await pool.openSession();
    await session.execute('kept = 41');
    const [helper] = launcherPids();
    const jails = processesOf(pool.workerUids());
    process.kill(helper!, 'SIGKILL');
    // The helper's jails die with it (parent-death signal), a moment later; until then the
    // session's worker could still answer.
    const gone = (pid: number) => parentOf(pid) === null;
    for (
      let attempt = 0;
      attempt < 250 && (launcherPids().includes(helper!) || !jails.every(gone));
      attempt += 1
    ) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(jails.every(gone)).toBe(true);
    const lost = await session.execute('print(kept)');
    expect(lost.status).toBe('killed');
    expect(await session.execute('kept = 1\nprint(kept + 1)')).toMatchObject({ status: 'ok', stdout: '2\n' });
    expect(launcherPids()).toHaveLength(1);
    expect(launcherPids()[0]).not.toBe(helper);
    const other = await pool.openSession();
    expect(await other.execute('print("fresh")')).toMatchObject({ status: 'ok', stdout: 'fresh\n' });
    await Promise.all([session.close(), other.close()]);
  });
});
