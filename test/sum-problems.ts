/** The RL tests' training file: twelve "Add A and B." problems (the scripted engines answer them). */
import { writeFileSync } from 'node:fs';

export function writeSumProblems(path: string): void {
  const rows = Array.from({ length: 12 }, (_, index) => ({
    id: `sum-${index}`,
    problem: `Add ${index + 3} and ${2 * index + 5}.`,
    answer: String(3 * index + 8),
  }));
  writeFileSync(path, rows.map((row) => JSON.stringify(row)).join('\n'));
}
