import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkRunFolder } from './run-folder-check.ts';
import { RUN_LOCK_FILE } from './run-folder-lock.ts';

const root = mkdtempSync(join(tmpdir(), 'run-folder-check-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const check = (folder: string, resume: boolean) =>
  checkRunFolder({ folder, marker: 'config.json', resume, command: 'rollout' });

describe('checkRunFolder', () => {
  it('starts a run in a missing or empty folder (a lock file aside) and refuses --resume there', () => {
    const empty = join(root, 'empty');
    mkdirSync(empty);
    writeFileSync(join(empty, RUN_LOCK_FILE), '{}');
    expect(check(join(root, 'missing'), false)).toBe(false);
    expect(check(empty, false)).toBe(false);
    expect(() => check(empty, true)).toThrow(
      /config\.json does not exist: there is no `agentmath rollout` run/,
    );
  });

  it('refuses a folder holding files without the marker, with or without --resume, naming them', () => {
    const foreign = join(root, 'foreign');
    mkdirSync(foreign);
    writeFileSync(join(foreign, 'trajectories.jsonl'), 'theirs\n');
    for (const resume of [false, true]) {
      expect(() => check(foreign, resume)).toThrow(
        expect.objectContaining({
          code: 'RUN_FOLDER_REFUSED',
          message: expect.stringContaining('trajectories.jsonl'),
        }),
      );
    }
    expect(readFileSync(join(foreign, 'trajectories.jsonl'), 'utf8')).toBe('theirs\n');
  });

  it('resumes a run only with --resume, and refuses a file as the folder', () => {
    const run = join(root, 'run');
    mkdirSync(run);
    writeFileSync(join(run, 'config.json'), '{}');
    expect(check(run, true)).toBe(true);
    expect(() => check(run, false)).toThrow(/already holds an `agentmath rollout` run: pass --resume/);
    expect(() => check(join(run, 'config.json'), false)).toThrow(/--out .*config\.json is a file/);
  });
});
