/**
 * One writer per run folder. A job that appends to a run folder (`rollout`, `synth run`,
 * `train rl`) takes `run.lock` in it first: the file holds the writer's pid and the start time
 * the kernel gives that pid, so a second writer (a `--resume` started while the first still
 * runs) is refused with code `RUN_FOLDER_LOCKED` (the CLI exits 2), while a lock left by a
 * process that died without releasing it (kill -9) is taken over: its pid is gone, is a
 * zombie (state Z or X in /proc/PID/stat), or now names another process (a different start time).
 *
 *   const release = await acquireRunFolderLock(folder, { command: 'rollout' });
 *   try { … } finally { await release(); }
 *
 * Covers processes on this machine only; a folder on shared storage written from two machines
 * is not protected (the pid of another host cannot be checked).
 */
import { readFileSync, unlinkSync } from 'node:fs';
import { mkdir, open, readFile, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { AgentMathError } from './agentmath-error.ts';

/** The lock file's name inside a run folder. */
export const RUN_LOCK_FILE = 'run.lock';

/** The code of the error a second writer gets (the CLI exits with status 2). */
export const RUN_FOLDER_LOCKED = 'RUN_FOLDER_LOCKED';

type LockOwner = { pid: number; startTime: string | null; host: string; command: string; since: string };

/** The fields of /proc/PID/stat after the command name (which may hold spaces), or null where absent. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** The kernel's start time of `pid` (clock ticks since boot), or null where /proc is absent. */
export function processStartTime(pid: number): string | null {
  // The start time is field 22 of the whole line.
  return statFields(pid)?.[19] ?? null;
}

/**
 * Whether `pid` has ended but is not yet reaped: state Z (zombie) or X (dead). A process
 * killed with its parent stays a zombie under an init that does not reap (many containers).
 */
function processEnded(pid: number): boolean {
  const state = statFields(pid)?.[0];
  return state === 'Z' || state === 'X';
}

/** Whether the process that wrote `owner` still runs. */
function ownerAlive(owner: LockOwner): boolean {
  if (owner.host !== hostname()) return true; // cannot tell: keep it
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (processEnded(owner.pid)) return false;
  const startTime = processStartTime(owner.pid);
  return owner.startTime === null || startTime === null || startTime === owner.startTime;
}

async function readOwner(path: string): Promise<LockOwner | null> {
  try {
    const owner = JSON.parse(await readFile(path, 'utf8')) as LockOwner;
    return typeof owner.pid === 'number' ? owner : null;
  } catch {
    return null; // unreadable or half-written: treated as stale
  }
}

/**
 * Takes the folder's lock (creating the folder) and returns its release. Throws
 * `RUN_FOLDER_LOCKED` when a live process holds it. The lock is also removed when the process
 * exits normally; after kill -9 the next writer finds it stale.
 */
export async function acquireRunFolderLock(
  folder: string,
  { command }: { command: string },
): Promise<() => Promise<void>> {
  await mkdir(folder, { recursive: true });
  const path = join(folder, RUN_LOCK_FILE);
  const owner: LockOwner = {
    pid: process.pid,
    startTime: processStartTime(process.pid),
    host: hostname(),
    command,
    since: new Date().toISOString(),
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(path, 'wx');
      await handle.writeFile(`${JSON.stringify(owner)}\n`);
      await handle.close();
      const onExit = () => {
        try {
          unlinkSync(path);
        } catch {
          // gone already
        }
      };
      process.once('exit', onExit);
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        process.off('exit', onExit);
        await rm(path, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = await readOwner(path);
    if (holder !== null && holder.pid !== process.pid && ownerAlive(holder)) {
      throw new AgentMathError(
        RUN_FOLDER_LOCKED,
        `${folder} is in use by \`agentmath ${holder.command}\` (pid ${holder.pid}${holder.host === hostname() ? '' : ` on ${holder.host}`}, since ${holder.since}); ` +
          `wait for it to end or stop it, or pass another --out (the lock is ${path})`,
      );
    }
    await rm(path, { force: true }); // stale: its writer is gone
  }
  throw new AgentMathError(
    RUN_FOLDER_LOCKED,
    `${path}: could not take the lock (another writer keeps taking it)`,
  );
}
