/**
 * The live descendants of a process, read from /proc (Linux): what a process group kill misses
 * when children start sessions of their own (torchrun's ranks). Elsewhere: none are found.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Every live descendant of `pid`, nearest first (not `pid` itself; zombies left out). */
export function descendantsOf(pid: number): number[] {
  const childrenOf = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name may hold spaces and parentheses: the fields follow the last ')'.
      const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z') continue;
      const siblings = childrenOf.get(Number(parent)) ?? [];
      siblings.push(Number(entry));
      childrenOf.set(Number(parent), siblings);
    } catch {
      // ended meanwhile
    }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of childrenOf.get(queue.shift() as number) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}
