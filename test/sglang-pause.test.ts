/**
 * The SGLang client's pause / continue / abort calls against the real PyTorch worker (small
 * `test` model), which serves SGLang's routes with SGLang's fields: what passes here is what
 * the client sends to SGLang.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createByteLevelTokenizer, JsonHttpClient, SglangEngine } from '../src/engine/index.ts';
import { type EmbeddedWorker, startEmbeddedWorker } from '../src/engine/local/index.ts';

const tokenizer = createByteLevelTokenizer();
const request = {
  promptTokenIds: tokenizer.encode('Compute 6*7.'),
  promptText: 'Compute 6*7.',
  maxNewTokens: 4,
  temperature: 0,
  topP: 1,
  stop: [],
};

describe('SGLang pause routes on the embedded worker', () => {
  let worker: EmbeddedWorker;
  let engine: SglangEngine;

  beforeAll(async () => {
    worker = await startEmbeddedWorker({ model: 'test', decodeThreads: 1, restart: false });
    engine = new SglangEngine({
      client: new JsonHttpClient({ baseUrl: worker.url, timeoutMs: 60_000, maxConcurrency: 8 }),
    });
  }, 120_000);

  afterAll(async () => {
    engine?.close();
    await worker?.stop();
  });

  /** The worker's queue, read until `done` holds (the test's own timeout bounds the wait). */
  async function waitForEngine(done: (stats: { running: number; waiting: number }) => boolean) {
    for (;;) {
      // SGLang's /server_info: the scheduler's live state per data-parallel rank.
      const answer = (await (await fetch(`${worker.url}/server_info`)).json()) as {
        internal_states: { num_running_reqs: number; num_waiting_reqs: number }[];
      };
      const state = answer.internal_states[0];
      const stats = { running: state?.num_running_reqs ?? 0, waiting: state?.num_waiting_reqs ?? 0 };
      if (done(stats)) return stats;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('a request whose AbortSignal fires is aborted on the server too (/abort_request by rid)', async () => {
    await engine.pauseGeneration('in_place'); // the request waits on the server, in the queue
    const controller = new AbortController();
    const pending = engine.generate(request, controller.signal);
    await waitForEngine((stats) => stats.waiting === 1);
    controller.abort();
    await expect(pending).resolves.toMatchObject({ finishReason: 'abort', tokenIds: [] });
    // Without the client's /abort_request the server would keep it and generate it at continue.
    await waitForEngine((stats) => stats.waiting === 0);
    await engine.continueGeneration();
  }, 60_000);

  it('pause with mode abort answers the paused request with finish reason abort; continue serves again', async () => {
    await engine.pauseGeneration('in_place');
    const pending = engine.generate(request);
    await waitForEngine((stats) => stats.waiting === 1);
    await engine.pauseGeneration('abort');
    await expect(pending).resolves.toMatchObject({ finishReason: 'abort', tokenIds: [] });
    await engine.continueGeneration();
    await expect(engine.generate(request)).resolves.toMatchObject({ finishReason: 'length' });
  }, 60_000);

  it('abortAll ends every request, each answering finish reason abort', async () => {
    await engine.pauseGeneration('retract');
    const pending = [engine.generate(request), engine.generate(request)];
    await waitForEngine((stats) => stats.waiting === 2);
    await engine.abortAll();
    for (const result of await Promise.all(pending)) expect(result.finishReason).toBe('abort');
    await engine.continueGeneration();
  }, 60_000);

  it('refuses an unknown pause mode as SGLang does (HTTP 400)', async () => {
    await expect(engine.pauseGeneration('sideways' as 'abort')).rejects.toMatchObject({ status: 400 });
  });
});
