/** The `step` of every line of a run's `metrics.jsonl`, in order (none when it is absent). */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export async function metricSteps(run: string): Promise<number[]> {
  const path = join(run, 'metrics.jsonl');
  if (!existsSync(path)) return [];
  return (await readFile(path, 'utf8'))
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => (JSON.parse(line) as { step: number }).step);
}
