import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveRlConfig } from './rl-config.ts';
import { startRlParts } from './rl-start-parts.ts';

const folder = mkdtempSync(join(tmpdir(), 'rl-start-parts-'));

/** A model folder (config.json with a model_type): every model takes the same parts. */
function modelFolder(name: string, modelType: string): string {
  const dir = join(folder, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ model_type: modelType }));
  return dir;
}

const huggingFace = modelFolder('qwen3', 'qwen3');

afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('train rl refuses --sp before anything starts', () => {
  it('when it does not divide the trainer processes', async () => {
    const config = resolveRlConfig({ init: huggingFace, trainerProcs: 3, sequenceParallel: 2 });
    await expect(startRlParts(config, folder)).rejects.toThrow('--sp 2: must divide --trainer-procs 3');
  });

});
