/**
 * Per-worker cgroup (v1) memory and pids limits, used where this machine lets us create
 * cgroups (detected once; when it does not, the pool logs a note and relies on rlimits).
 * Groups are created under this process's own cgroup, named `agentmath-<pid>-<n>`, and
 * removed when their worker ends; groups left by a dead process are swept on start.
 * Detection runs once, synchronously, when a pool is created; everything on a session's path
 * (creating, querying for an OOM kill, removing) is asynchronous, so a slow cgroup rmdir
 * (tens of milliseconds in the kernel) never holds the event loop.
 */
import { mkdirSync, readdirSync, readFileSync, rmdirSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** One worker's cgroups. */
export type WorkerCgroup = {
  /** Files the jail prologue writes its pid into. */
  procsFiles: string[];
  /** True when the kernel's OOM killer acted inside the group. */
  oomKilled(): Promise<boolean>;
  /** Current memory charge of the group, or null when unknown (a synchronous read, for stats). */
  memoryBytes(): number | null;
  /** Removes the groups once empty (waits briefly for dying processes). */
  remove(): Promise<void>;
};

export type CgroupSupport = {
  create(limits: { memoryBytes: number; pids: number }): Promise<WorkerCgroup>;
};

let groupCounter = 0;

function ownPath(controller: string): string | null {
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, controllers, path] = line.split(':');
    if (controllers?.split(',').includes(controller) && path !== undefined) return path;
  }
  return null;
}

function sweepStale(base: string): void {
  for (const name of readdirSync(base)) {
    const match = /^agentmath-(\d+)-\d+$/.exec(name);
    if (!match) continue;
    if (isAlive(Number(match[1]))) continue;
    try {
      rmdirSync(join(base, name));
    } catch {
      // still busy or already gone
    }
  }
}

/** Ignores "already removed"; rethrows anything else (a busy group). */
function absent(error: NodeJS.ErrnoException): void {
  if (error.code !== 'ENOENT') throw error;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Detects writable cgroup v1 memory and pids hierarchies; returns null (with a note) otherwise. */
export function detectCgroupSupport(log: (line: string) => void): CgroupSupport | null {
  try {
    const memoryOwn = ownPath('memory');
    const pidsOwn = ownPath('pids');
    if (memoryOwn === null || pidsOwn === null) throw new Error('no cgroup v1 memory/pids controllers');
    const memoryBase = join('/sys/fs/cgroup/memory', memoryOwn);
    const pidsBase = join('/sys/fs/cgroup/pids', pidsOwn);
    const probe = `agentmath-${process.pid}-probe`;
    for (const base of [memoryBase, pidsBase]) {
      mkdirSync(join(base, probe));
      rmdirSync(join(base, probe));
      sweepStale(base);
    }
    return {
      async create(limits) {
        groupCounter += 1;
        const name = `agentmath-${process.pid}-${groupCounter}`;
        const memoryDir = join(memoryBase, name);
        const pidsDir = join(pidsBase, name);
        await Promise.all([mkdir(memoryDir), mkdir(pidsDir)]);
        try {
          await writeFile(join(pidsDir, 'pids.max'), String(limits.pids));
          await writeFile(join(memoryDir, 'memory.limit_in_bytes'), String(limits.memoryBytes));
          // After the memory limit (memsw may not be below it); absent or refused when swap
          // accounting is off, and then the memory limit alone applies.
          await writeFile(join(memoryDir, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes)).catch(
            () => {},
          );
        } catch (error) {
          await Promise.all([rmdir(memoryDir).catch(() => {}), rmdir(pidsDir).catch(() => {})]);
          throw error;
        }
        return {
          procsFiles: [join(memoryDir, 'cgroup.procs'), join(pidsDir, 'cgroup.procs')],
          async oomKilled() {
            try {
              const control = await readFile(join(memoryDir, 'memory.oom_control'), 'utf8');
              const kills = /oom_kill (\d+)/.exec(control);
              if (kills) return Number(kills[1]) > 0;
              return Number(await readFile(join(memoryDir, 'memory.failcnt'), 'utf8')) > 0;
            } catch {
              return false;
            }
          },
          memoryBytes() {
            try {
              return Number(readFileSync(join(memoryDir, 'memory.usage_in_bytes'), 'utf8'));
            } catch {
              return null;
            }
          },
          async remove() {
            for (let attempt = 0; attempt < 100; attempt += 1) {
              try {
                await Promise.all([rmdir(memoryDir).catch(absent), rmdir(pidsDir).catch(absent)]);
                return;
              } catch {
                await new Promise((resolve) => setTimeout(resolve, 20));
              }
            }
            log(`sandbox: could not remove cgroup ${name} (processes still inside)`);
          },
        };
      },
    };
  } catch (error) {
    log(
      `sandbox: cgroup memory/pids limits unavailable (${error instanceof Error ? error.message : String(error)}); using rlimits only`,
    );
    return null;
  }
}
