/**
 * Weight sync from disk through real processes: the distributed trainer trains a random-init
 * Qwen3, exports it, and two embedded engine replicas (the worker's Hugging Face backend,
 * speaking SGLang's routes) are paused, load the folder and continue. Afterwards their greedy
 * generation equals a fresh engine's serving the exported folder: the engines really hold the
 * new weights.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type HttpEngine } from '../src/engine/create-engine.ts';
import { type EmbeddedWorker, startEmbeddedWorker } from '../src/engine/local/index.ts';
import type { SglangEngine } from '../src/engine/sglang-engine.ts';
import { initHfModel } from '../src/model/index.ts';
import { startTrainerService, syncWeightsFromDisk, type TrainerService } from '../src/train/index.ts';

let folder: string;
let model: string;
let service: TrainerService;
const workers: EmbeddedWorker[] = [];
const engines: HttpEngine[] = [];

const PROMPT = [12, 40, 41, 7, 99, 3, 15];

async function greedy(engine: HttpEngine): Promise<number[]> {
  const result = await engine.generate({
    promptTokenIds: PROMPT,
    maxNewTokens: 12,
    temperature: 0,
    topP: 1,
    stop: [],
  });
  expect(result.tokenIds).not.toBeNull();
  return result.tokenIds ?? [];
}

async function serve(path: string): Promise<HttpEngine> {
  const worker = await startEmbeddedWorker({ model: path, port: 0, restart: false });
  workers.push(worker);
  const engine = createEngine({ url: worker.url, api: 'sglang' });
  engines.push(engine);
  return engine;
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'agentmath-weight-sync-'));
  model = join(folder, 'qwen3');
  await initHfModel({ arch: 'qwen3', out: model, hidden: 32, seed: 8 });
  service = await startTrainerService({ model, microBatchTokens: 128 });
}, 300_000);

afterAll(async () => {
  for (const engine of engines) engine.close();
  await Promise.all(workers.map((worker) => worker.stop()));
  await service?.stop();
  await rm(folder, { recursive: true, force: true });
});

describe('syncWeightsFromDisk', () => {
  it('pauses two replicas, loads the trained weights and continues; they then generate as a fresh engine of the export', async () => {
    const replicas = [await serve(model), await serve(model)];
    const before = await greedy(replicas[0]!);
    for (let step = 0; step < 3; step++) {
      await service.client.sftStep({
        sequences: [
          { inputIds: [...PROMPT, 5, 6, 7, 8, 9, 10], lossMask: [...PROMPT.map(() => 0), 1, 1, 1, 1, 1, 1] },
        ],
        learningRate: 5e-2,
      });
    }
    const exported = join(folder, 'policy-v3');
    const result = await syncWeightsFromDisk({
      trainer: service.client,
      engines: replicas as unknown as SglangEngine[],
      path: exported,
    });
    expect(result.policyVersion).toBe(3);
    expect(result.pausedMs).toBeGreaterThanOrEqual(0);
    const fresh = await serve(exported);
    const expected = await greedy(fresh);
    expect(expected).not.toEqual(before); // the steps changed what the model says
    for (const replica of replicas) expect(await greedy(replica)).toEqual(expected);
  }, 600_000);
});
