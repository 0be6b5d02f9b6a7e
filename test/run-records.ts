/** Reading a run folder's records from a test or a long check script. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The JSON lines of a record file (none when it does not exist yet). */
export function lines(path: string): Record<string, unknown>[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The rollout's committed next step (0 before the first commit). */
export function committed(run: string): number {
  const path = join(run, 'checkpoint.json');
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as { nextStep: number }).nextStep : 0;
}

/** Polls `condition` every 100 ms (no deadline: the caller's own limit is the bound). */
export async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 100));
}
