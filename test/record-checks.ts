/**
 * Checks the record files a real command wrote against their schemas (src/records): the file
 * exists, holds at least one record, and every line (or the document) satisfies the schema of
 * the catalogue entry named. End-to-end tests call `expectRecordFiles` on the folders their
 * runs leave; `src/records/record-files.test.ts` requires a call for every record file.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { expect } from 'vitest';
import { z } from 'zod';
import { recordFile } from '../src/records/index.ts';

/** Every record of the file `id` in `folder`, each checked against the file's schema. */
export function expectRecordFile(folder: string, id: string): Record<string, unknown>[] {
  const file = recordFile(id);
  const path = join(folder, basename(file.path));
  expect(existsSync(path), `${path} (${id}) was not written`).toBe(true);
  const text = readFileSync(path, 'utf8');
  const values =
    file.format === 'json'
      ? [JSON.parse(text) as unknown]
      : text
          .split('\n')
          .filter((line) => line.trim() !== '')
          .map((line) => JSON.parse(line) as unknown);
  expect(values.length, `${path} (${id}) holds no record`).toBeGreaterThan(0);
  values.forEach((value, index) => {
    const parsed = file.schema.safeParse(value);
    if (!parsed.success) {
      const where = file.format === 'jsonl' ? `${path} line ${index + 1}` : path;
      expect.fail(`${where} does not match the schema of ${id}:\n${z.prettifyError(parsed.error)}`);
    }
  });
  return values as Record<string, unknown>[];
}

/** `expectRecordFile` for each of `ids` in `folder`. */
export function expectRecordFiles(folder: string, ids: readonly string[]): void {
  for (const id of ids) expectRecordFile(folder, id);
}
