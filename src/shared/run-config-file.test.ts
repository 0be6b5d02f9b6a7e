import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RUN_CONFIG_INVALID, readRunConfigFile } from './run-config-file.ts';

const folder = mkdtempSync(join(tmpdir(), 'agentmath-run-config-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('readRunConfigFile', () => {
  it('reads the saved configuration (a byte-order mark too)', async () => {
    const path = join(folder, 'config.json');
    writeFileSync(path, '\uFEFF{"steps": 3}\n');
    expect(await readRunConfigFile(path)).toEqual({ steps: 3 });
  });

  it('names the file of a configuration cut short, with a stable code and what to do', async () => {
    const path = join(folder, 'cut.json');
    writeFileSync(path, '{"steps": 3, "mod');
    const error = await readRunConfigFile(path).catch((caught: unknown) => caught);
    expect((error as { code?: string }).code).toBe(RUN_CONFIG_INVALID);
    expect((error as Error).message).toContain(`${path}: the run's saved configuration is not valid JSON`);
    expect((error as Error).message).toContain('another --out');
  });
});
