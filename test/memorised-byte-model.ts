/**
 * A byte model that has learned given token sequences by heart, made the way every model is
 * trained: a new byte model of the `test` shape (`model init --arch byte-gpt`), SFT steps on
 * the real trainer service (`agentmath_train`, one process), the weights exported and loaded
 * into a local engine after each round of steps, until `learned` says the engine reproduces
 * what it must (greedy). The model is left in `out` (Hugging Face layout), for tests that need
 * a model whose answers they know.
 */
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createEngine, type HttpEngine } from '../src/engine/index.ts';
import { startEmbeddedWorker } from '../src/engine/local/index.ts';
import { initHfModel } from '../src/model/index.ts';
import { startTrainerService } from '../src/train/index.ts';

export type MemoriseOptions = {
  sequences: { inputIds: number[]; lossMask: number[] }[];
  /** Where the learned model goes (must not exist yet). */
  out: string;
  /** null when the engine reproduces everything, else what it got wrong. */
  learned: (engine: HttpEngine) => Promise<string | null>;
  learningRate?: number;
  stepsPerRound?: number;
  rounds?: number;
};

export async function memoriseByteModel({
  sequences,
  out,
  learned,
  learningRate = 0.01,
  stepsPerRound = 50,
  rounds = 12,
}: MemoriseOptions): Promise<void> {
  const scratch = await mkdtemp(join(tmpdir(), 'agentmath-memorise-'));
  try {
    const init = join(scratch, 'init');
    await initHfModel({ arch: 'byte-gpt', shape: 'test', out: init });
    const trainer = await startTrainerService({ model: init, processes: 1, threads: 1 });
    const worker = await startEmbeddedWorker({ model: init, decodeThreads: 1, restart: false });
    const engine = createEngine({ api: 'sglang', url: worker.url });
    try {
      let mismatch: string | null = 'not trained';
      for (let round = 0; round < rounds && mismatch !== null; round++) {
        for (let step = 0; step < stepsPerRound; step++)
          await trainer.client.sftStep({ sequences, learningRate });
        const exported = join(scratch, `round-${round}`);
        await trainer.client.exportModel(exported);
        const answer = await fetch(`${worker.url}/update_weights_from_disk`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model_path: exported }),
        });
        if (!answer.ok)
          throw new Error(`the engine refused the weights of round ${round}: ${await answer.text()}`);
        mismatch = await learned(engine);
        if (mismatch === null) {
          await mkdir(dirname(out), { recursive: true });
          await cp(exported, out, { recursive: true });
        }
      }
      if (mismatch !== null) {
        throw new Error(
          `the byte model did not learn the sequences in ${rounds * stepsPerRound} steps: ${mismatch}`,
        );
      }
    } finally {
      engine.close();
      await worker.stop();
      await trainer.stop();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
