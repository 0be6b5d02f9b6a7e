/**
 * End to end: the supervisor starts the real PyTorch engine on a byte model (the `test` shape,
 * taught one answer on the trainer), the project's SGLang client talks to it unchanged (stop
 * strings, logprobs, token ids, finish reasons, seeds, weight versions), a real multi-turn
 * trajectory becomes a GRPO sequence whose prompt and interpreter tokens are masked, the engine
 * loads new weights from disk, and the supervisor restarts it after a crash and stops it cleanly.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { problemOnlyPrompt, runAgent } from '../src/agent/index.ts';
import { createByteLevelTokenizer, createEngine, type HttpEngine } from '../src/engine/index.ts';
import { type EmbeddedWorker, startEmbeddedWorker, type WorkerEvent } from '../src/engine/local/index.ts';
import { initHfModel } from '../src/model/index.ts';
import { tagsDialect } from '../src/protocol/index.ts';
import { grpoSequence } from '../src/train/index.ts';
import { openTestSandbox } from './agent-sandbox.ts';
import { memoriseByteModel } from './memorised-byte-model.ts';

const tokenizer = createByteLevelTokenizer();
const PROMPT = tokenizer.applyChatTemplate([{ role: 'user', content: 'Compute 6*7.' }]);
const ANSWER = '<think>We compute.<code>\nprint(6*7)\n</code>\n';

describe('embedded worker', () => {
  let worker: EmbeddedWorker;
  let engine: HttpEngine;
  let trimmingEngine: HttpEngine;
  let temp: string;
  const events: WorkerEvent[] = [];

  beforeAll(async () => {
    temp = await mkdtemp(join(tmpdir(), 'agentmath-embedded-'));
    // Teach the small model one answer, so greedy decoding reaches the stop string and EOS.
    const prompt = tokenizer.encode(PROMPT);
    const answer = [...tokenizer.encode(ANSWER), 256];
    const sequence = {
      inputIds: [...prompt, ...answer],
      lossMask: [...prompt.map(() => 0), ...answer.map(() => 1)],
    };
    await memoriseByteModel({
      sequences: [sequence],
      out: join(temp, 'model'),
      learningRate: 0.003,
      learned: async (candidate) => {
        const result = await candidate.generate({
          promptTokenIds: prompt,
          maxNewTokens: answer.length + 4,
          temperature: 0,
          topP: 1,
          stop: [],
        });
        return JSON.stringify(result.tokenIds) === JSON.stringify(answer)
          ? null
          : `got ${JSON.stringify(result.text)}`;
      },
    });
    worker = await startEmbeddedWorker({
      model: join(temp, 'model'),
      decodeThreads: 1,
      onEvent: (event) => events.push(event),
    });
    engine = createEngine({ api: 'sglang', url: worker.url });
    trimmingEngine = createEngine({ api: 'sglang', url: worker.url, includeStopInOutput: false });
  }, 300_000);

  afterAll(async () => {
    engine?.close();
    trimmingEngine?.close();
    await worker?.stop();
    await rm(temp, { recursive: true, force: true });
  });

  const request = (stop: string[], maxNewTokens = 100, seed?: number) => ({
    promptTokenIds: tokenizer.encode(PROMPT),
    maxNewTokens,
    temperature: seed === undefined ? 0 : 1,
    topP: 1,
    stop,
    ...(seed === undefined ? {} : { seed }),
  });

  it('stops at a stop string with the stop tokens in the ids, and trims text on request', async () => {
    const kept = await engine.generate(request(['</code>']));
    expect(kept.finishReason).toBe('stop');
    expect(kept.matchedStop).toBe('</code>');
    expect(kept.text).toBe('<think>We compute.<code>\nprint(6*7)\n</code>');
    expect(kept.stopIncluded).toBe(true);
    expect(tokenizer.decode(kept.tokenIds!)).toBe(kept.text);
    expect(kept.logprobs).toHaveLength(kept.tokenIds!.length);
    for (const logprob of kept.logprobs!) expect(logprob).toBeLessThanOrEqual(0);

    const trimmed = await trimmingEngine.generate(request(['</code>']));
    expect(trimmed.text).toBe('<think>We compute.<code>\nprint(6*7)\n');
    expect(trimmed.tokenIds).toEqual(kept.tokenIds);
    expect(trimmed.stopIncluded).toBe(false);
  });

  it('reports EOS as a stop without a matched string, and length when the budget runs out', async () => {
    const full = await engine.generate(request([]));
    expect(full.finishReason).toBe('stop');
    expect(full.matchedStop).toBeNull();
    expect(full.tokenIds!.at(-1)).toBe(256);
    const short = await engine.generate(request(['</code>'], 5));
    expect(short.finishReason).toBe('length');
    expect(short.tokenIds).toHaveLength(5);
  });

  it('gives the same tokens for the same seed, and reports the weight version', async () => {
    const first = await engine.generate(request([], 30, 11));
    const again = await engine.generate(request([], 30, 11));
    expect(again.tokenIds).toEqual(first.tokenIds);
    expect(again.logprobs).toEqual(first.logprobs);
    expect(first.policyVersion).toBe(0);
  });

  it('turns a real multi-turn trajectory into a GRPO sequence whose prompt and interpreter tokens have loss mask 0', async () => {
    const sandbox = await openTestSandbox();
    try {
      // The taught code block runs in the jail, the model goes on.
      const trajectory = await runAgent(
        { id: 'p', text: 'Compute 6*7.' },
        {
          engine,
          tokenizer,
          sandbox,
          dialect: tagsDialect,
          prompt: problemOnlyPrompt,
          budgets: { maxTotalTokens: 160, maxToolCalls: 2, maxNewTokensPerTurn: 60 },
          sampling: { temperature: 0, topP: 1 },
        },
      );
      const tool = trajectory.segments.filter((segment) => segment.kind === 'tool');
      expect(tool.length).toBeGreaterThan(0);
      expect(tool[0]?.text).toContain('42');
      const sequence = grpoSequence(trajectory, 1);
      if (typeof sequence === 'string') throw new Error(sequence);
      // Walk the segments: prompt and tool tokens must be 0, model tokens 1.
      let position = trajectory.prompt.tokenIds!.length;
      expect(sequence.lossMask.slice(0, position).every((mask) => mask === 0)).toBe(true);
      for (const segment of trajectory.segments) {
        const ids = segment.tokenIds!;
        expect(sequence.inputIds.slice(position, position + ids.length)).toEqual(ids);
        const expected = segment.kind === 'tool' ? 0 : 1;
        expect(
          sequence.lossMask.slice(position, position + ids.length).every((mask) => mask === expected),
        ).toBe(true);
        position += ids.length;
      }
      expect(position).toBe(sequence.inputIds.length);
    } finally {
      await sandbox.close();
    }
  }, 60_000);

  it("loads another folder's weights from disk with the version given, and the taught ones back", async () => {
    const other = join(temp, 'other');
    await initHfModel({ arch: 'byte-gpt', shape: 'test', out: other, seed: 9 });
    const update = async (path: string, version: string) =>
      (await fetch(`${worker.url}/update_weights_from_disk`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model_path: path, weight_version: version }),
      }).then((answer) => answer.json())) as { success: boolean };
    const taught = await engine.generate(request([], 12));
    expect(await update(other, '7')).toMatchObject({ success: true });
    const untaught = await engine.generate(request([], 12));
    expect(untaught.policyVersion).toBe(7);
    expect(untaught.logprobs).not.toEqual(taught.logprobs);
    expect(await update(join(temp, 'model'), '8')).toMatchObject({ success: true });
    expect((await engine.generate(request([], 12))).tokenIds).toEqual(taught.tokenIds);
  });

  it('restarts the worker on the same port after a crash', async () => {
    const firstPid = worker.pid()!;
    const healthyBefore = events.filter((event) => event.type === 'worker-healthy').length;
    process.kill(firstPid, 'SIGKILL');
    const deadline = Date.now() + 60_000;
    while (events.filter((event) => event.type === 'worker-healthy').length === healthyBefore) {
      if (Date.now() > deadline) throw new Error('the worker was not restarted');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(worker.pid()).not.toBe(firstPid);
    expect(worker.restarts()).toBe(1);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'worker-exit', signal: 'SIGKILL', expected: false }),
    );
    const result = await engine.generate(request([], 4));
    expect(result.tokenIds).toHaveLength(4);
  }, 90_000);
});

describe('embedded worker supervisor', () => {
  it('fails to start with a clear error for an unknown model', async () => {
    await expect(startEmbeddedWorker({ model: '/no/such/model', restart: false })).rejects.toMatchObject({
      code: 'WORKER_START_FAILED',
      message: expect.stringContaining('not a byte-model shape'),
    });
  });

  it('does not restart a worker that failed to start (here: it refused its --model, exit 2)', async () => {
    const events: WorkerEvent[] = [];
    await expect(
      startEmbeddedWorker({ model: '/no/such/model', onEvent: (event) => events.push(event) }),
    ).rejects.toMatchObject({
      code: 'WORKER_START_FAILED',
      message: expect.stringContaining('no such folder'),
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // a restart would be scheduled by now
    expect(events.map((event) => event.type)).toEqual(['worker-exit']);
  });
});
