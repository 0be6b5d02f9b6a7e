/**
 * `train rl`'s parts for the embedded byte model: one PyTorch worker serves `/generate` and
 * trains (`TrainerClient` on the same URL), a local jailed sandbox runs the code. The worker
 * generates with the weights it trains, so a sync sends nothing and rollout cannot overlap
 * training (there is one set of weights). `model/` is the worker's own checkpoint format.
 */
import { join } from 'node:path';
import { type PromptBuilderName, promptBuilders, SessionPark } from '../agent/index.ts';
import { createEngine } from '../engine/create-engine.ts';
import { loadTokenizer } from '../engine/load-tokenizer.ts';
import { startEmbeddedWorker } from '../engine/local/worker-supervisor.ts';
import { getDialect } from '../protocol/index.ts';
import { createLocalSandbox } from '../sandbox/index.ts';
import type { RlParts } from './rl-parts.ts';
import { TrainerClient } from './trainer-client.ts';

export type ColocatedPartsOptions = {
  /** The byte model's folder (`--model`). */
  model: string;
  seed: number;
  trainThreads: number;
  sandboxWorkers: number;
  prompt: PromptBuilderName;
  workerLog?: (line: string) => void;
};

export async function startColocatedParts(options: ColocatedPartsOptions): Promise<RlParts> {
  const worker = await startEmbeddedWorker({
    model: options.model,
    seed: options.seed,
    restart: false,
    ...(options.trainThreads > 0 ? { trainThreads: options.trainThreads } : {}),
    ...(options.workerLog ? { onLog: (line: string) => options.workerLog?.(line) } : {}),
  });
  const sandbox = createLocalSandbox({ maxWorkers: options.sandboxWorkers, warmWorkers: 2 });
  const park = new SessionPark();
  const engine = createEngine({ api: 'sglang', url: worker.url, name: 'embedded', maxConcurrency: 64 });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    engine.close();
    await park.closeAll();
    await sandbox.close();
    await worker.stop();
  };
  try {
    const trainer = new TrainerClient({ baseUrl: worker.url });
    const info = await trainer.modelInfo();
    return {
      kind: 'colocated',
      engine,
      routerName: 'single',
      evalUrl: worker.url,
      trainer,
      syncWeights: async () => null,
      // The worker's checkpoint format, written once at the end (the byte model is saved whole).
      publishModel: async (folder, { final }) => {
        if (final) await trainer.saveCheckpoint(join(folder, 'model'));
      },
      canOverlap: false,
      tokenizer: await loadTokenizer(options.model),
      dialect: getDialect('tags'),
      prompt: promptBuilders[options.prompt],
      contextTokens: info.contextLength,
      parameters: info.parameters,
      sandbox,
      park,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
