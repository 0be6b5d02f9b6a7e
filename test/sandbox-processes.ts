/** Test helper: finds live processes by uid, to prove a jail left nothing behind. */
import { readdirSync, readFileSync } from 'node:fs';

/** Pids of live (non-zombie-reaped) processes running as one of `uids`. */
export function processesOf(uids: number[]): number[] {
  const wanted = new Set(uids);
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const uid = /Uid:\s+(\d+)/.exec(readFileSync(`/proc/${entry}/status`, 'utf8'));
      if (uid && wanted.has(Number(uid[1]))) found.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return found;
}
