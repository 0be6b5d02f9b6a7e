import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MODEL_QUICKSTART_DEFAULTS } from '../../quickstart/model-quickstart.ts';
import { modelQuickstartOptions } from './quickstart-model.ts';

const folder = mkdtempSync(join(tmpdir(), 'agentmath-quickstart-model-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** A folder with a config.json of this model_type. */
function modelFolder(name: string, modelType: string): string {
  const dir = join(folder, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ model_type: modelType }));
  return dir;
}

describe('quickstart --model: the options from the flags', () => {
  it('pulls a known name into the project and takes the real model’s defaults', () => {
    const options = modelQuickstartOptions({ model: 'smollm2-135m-instruct' }, '/project');
    expect(options).toEqual({
      model: { type: 'pullable', name: 'smollm2-135m-instruct' },
      root: '/project',
      outDir: resolve('runs/quickstart-smollm2-135m-instruct'),
      count: MODEL_QUICKSTART_DEFAULTS.count,
      concurrency: MODEL_QUICKSTART_DEFAULTS.concurrency,
      trainMinutes: MODEL_QUICKSTART_DEFAULTS.trainMinutes,
      rlMinutes: MODEL_QUICKSTART_DEFAULTS.rlMinutes,
    });
  });

  it('uses a Hugging Face folder as it is, named after it, and keeps what the command line gave', () => {
    const dir = modelFolder('my-llama', 'llama');
    const options = modelQuickstartOptions(
      {
        model: dir,
        count: 7,
        concurrency: 2,
        trainMinutes: 1.5,
        rlMinutes: 0,
        retrain: true,
        out: 'elsewhere',
      },
      '/project',
    );
    expect(options).toMatchObject({
      model: { type: 'folder', dir },
      outDir: resolve('elsewhere'),
      count: 7,
      concurrency: 2,
      trainMinutes: 1.5,
      rlMinutes: 0,
      retrain: true,
    });
    expect(modelQuickstartOptions({ model: dir }, '/project').outDir).toBe(
      resolve('runs/quickstart-my-llama'),
    );
  });

  it('refuses, as a usage error naming the known models, a name it does not know', () => {
    expect(() => modelQuickstartOptions({ model: 'smollm3' }, '/project')).toThrow(
      expect.objectContaining({
        code: 'CLI_BAD_OPTION',
        message: expect.stringContaining(
          '--model smollm3: not a model the quickstart knows (smollm2-135m-instruct)',
        ),
      }),
    );
  });

  it('refuses a folder that is not a Hugging Face model: the embedded byte model, a folder without config.json', () => {
    const empty = join(folder, 'empty');
    mkdirSync(empty);
    for (const dir of [modelFolder('byte', 'agentmath-byte-gpt'), empty]) {
      expect(() => modelQuickstartOptions({ model: dir }, '/project')).toThrow(
        expect.objectContaining({
          code: 'CLI_BAD_OPTION',
          message: expect.stringContaining(`--model ${dir}: not a Hugging Face model folder`),
        }),
      );
    }
  });
});
