/** Test helper: the live descendants of a process, read from /proc (jails included). */
import { readdirSync, readFileSync } from 'node:fs';

/** Pid → parent pid of every live process. */
function parents(): Map<number, number> {
  const map = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name (2nd field) may hold spaces and parentheses: fields follow the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z') map.set(Number(entry), Number(fields[1]));
    } catch {
      // ended meanwhile
    }
  }
  return map;
}

/** Every live descendant of `pid` (not `pid` itself). */
export function descendantsOf(pid: number): number[] {
  const map = parents();
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [child, ppid] of map) {
      if (ppid === parent) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

/** Those of `pids` still alive (zombies count as gone). */
export function alive(pids: number[]): number[] {
  const map = parents();
  return pids.filter((pid) => map.has(pid));
}
