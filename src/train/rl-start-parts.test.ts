import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveRlConfig } from './rl-config.ts';
import { localSandboxWorkers, startRlParts } from './rl-start-parts.ts';

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

describe('train rl refuses a weight-sync address the engines cannot use before anything starts', () => {
  it('a loopback master (a trainer by a loopback URL) with an engine on another machine', async () => {
    const config = resolveRlConfig({
      init: huggingFace,
      weightSync: 'distributed',
      trainerUrl: 'http://127.0.0.1:31000',
      engines: ['http://10.1.2.3:30000'],
    });
    await expect(startRlParts(config, folder)).rejects.toThrow(
      /master would be 127\.0\.0\.1, which http:\/\/10\.1\.2\.3:30000 cannot reach .* give --weight-sync-address HOST/,
    );
  });

  it('--weight-sync-address without --weight-sync distributed', async () => {
    const config = resolveRlConfig({ init: huggingFace, weightSyncAddress: '10.0.0.9' });
    await expect(startRlParts(config, folder)).rejects.toThrow(
      '--weight-sync-address: for --weight-sync distributed',
    );
  });
});

describe('the local sandbox of train rl', () => {
  it('has a worker for every request in flight unless told otherwise', () => {
    expect(localSandboxWorkers(resolveRlConfig({ init: 'model' }))).toBe(32);
    expect(localSandboxWorkers(resolveRlConfig({ init: 'model', replicas: 2, maxInFlight: 16 }))).toBe(32);
    expect(
      localSandboxWorkers(
        resolveRlConfig({ init: 'model', engines: ['http://a:1', 'http://b:1', 'http://c:1'] }),
      ),
    ).toBe(96);
    expect(localSandboxWorkers(resolveRlConfig({ init: 'model', sandboxWorkers: 8 }))).toBe(8);
    // No more than one local pool runs.
    expect(localSandboxWorkers(resolveRlConfig({ init: 'model', replicas: 8, maxInFlight: 64 }))).toBe(256);
    expect(() => resolveRlConfig({ init: 'model', sandboxWorkers: 300 })).toThrow(/sandboxWorkers/);
  });
});
