/** The worker's untrained `test` preset saved as a model folder: a byte model `train rl --model` starts from. */
import { startEmbeddedWorker } from '../src/engine/local/index.ts';
import { TrainerClient } from '../src/train/index.ts';

export async function saveTestPresetModel(folder: string): Promise<void> {
  const worker = await startEmbeddedWorker({
    model: 'test',
    decodeThreads: 1,
    trainThreads: 1,
    restart: false,
  });
  try {
    await new TrainerClient({ baseUrl: worker.url }).saveCheckpoint(folder);
  } finally {
    await worker.stop();
  }
}
