/**
 * End to end: the supervisor starts the real PyTorch worker (small `test` model), the project's
 * SGLang client talks to it unchanged (stop strings, logprobs, token ids, finish reasons,
 * seeds, policy versions), the trainer client trains it, and the supervisor restarts it after
 * a crash and stops it cleanly.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { problemOnlyPrompt, runAgent } from '../src/agent/index.ts';
import {
  createByteLevelTokenizer,
  createEngine,
  type HttpEngine,
  loadTokenizer,
} from '../src/engine/index.ts';
import { type EmbeddedWorker, startEmbeddedWorker, type WorkerEvent } from '../src/engine/local/index.ts';
import { tagsDialect } from '../src/protocol/index.ts';
import { grpoSequence, TrainerClient, TrainerRequestError } from '../src/train/index.ts';
import { openTestSandbox } from './agent-sandbox.ts';

const tokenizer = createByteLevelTokenizer();
const PROMPT = tokenizer.applyChatTemplate([{ role: 'user', content: 'Compute 6*7.' }]);
const ANSWER = '<think>We compute.<code>\nprint(6*7)\n</code>\n';

describe('embedded worker', () => {
  let worker: EmbeddedWorker;
  let trainer: TrainerClient;
  let engine: HttpEngine;
  let trimmingEngine: HttpEngine;
  let temp: string;
  const events: WorkerEvent[] = [];

  beforeAll(async () => {
    temp = await mkdtemp(join(tmpdir(), 'agentmath-embedded-'));
    worker = await startEmbeddedWorker({
      model: 'test',
      decodeThreads: 1,
      trainThreads: 1,
      onEvent: (event) => events.push(event),
    });
    trainer = new TrainerClient({ baseUrl: worker.url });
    engine = createEngine({ api: 'sglang', url: worker.url });
    trimmingEngine = createEngine({ api: 'sglang', url: worker.url, includeStopInOutput: false });
    // Teach the small model one answer, so greedy decoding reaches the stop string and EOS.
    const prompt = tokenizer.encode(PROMPT);
    const answer = [...tokenizer.encode(ANSWER), 256];
    const sequence = {
      inputIds: [...prompt, ...answer],
      lossMask: [...prompt.map(() => 0), ...answer.map(() => 1)],
    };
    for (let step = 0; step < 100; step++)
      await trainer.sftStep({ sequences: [sequence], learningRate: 0.003 });
  }, 120_000);

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

  it('gives the same tokens for the same seed, and reports the policy version', async () => {
    const first = await engine.generate(request([], 30, 11));
    const again = await engine.generate(request([], 30, 11));
    expect(again.tokenIds).toEqual(first.tokenIds);
    expect(again.logprobs).toEqual(first.logprobs);
    const state = await trainer.state();
    expect(first.policyVersion).toBe(state.policyVersion);
    expect(state.policyVersion).toBeGreaterThanOrEqual(100);
  });

  it('trains with GRPO, saves a loadable folder and syncs weights from disk', async () => {
    const ids = [...tokenizer.encode(PROMPT), ...tokenizer.encode('<think>42')];
    const mask = ids.map((_, index) => (index >= ids.length - 9 ? 1 : 0));
    const folder = join(temp, 'checkpoint');
    const saved = await trainer.saveCheckpoint(folder);
    const { tokenLogprobs } = await trainer.score([ids]);
    const step = await trainer.grpoStep({
      sequences: [{ inputIds: ids, lossMask: mask, advantage: 1, oldLogprobs: tokenLogprobs[0]! }],
      learningRate: 0.01,
      klCoef: 0.01,
    });
    expect(step.policyVersion).toBe(saved.policyVersion + 1);
    expect(step.meanRatio).toBeCloseTo(1, 4);
    expect(step.klRef).not.toBeNull();
    const after = await trainer.score([ids]);
    const sum = (values: number[]) => values.slice(-9).reduce((total, value) => total + value, 0);
    expect(sum(after.tokenLogprobs[0]!)).toBeGreaterThan(sum(tokenLogprobs[0]!));
    // The decoupled objective: behaviour logprobs 0.5 below the trainer's, weight e^0.5 capped at 1.2.
    const decoupled = await trainer.grpoStep({
      sequences: [
        {
          inputIds: ids,
          lossMask: mask,
          advantage: -1,
          oldLogprobs: after.tokenLogprobs[0]!.map((value) => value - 0.5),
        },
      ],
      learningRate: 0.01,
      proximal: 'recompute',
      offPolicyCap: 1.2,
      aggregation: 'sequence-mean',
      dualClip: 3,
      klEstimator: 'k2',
    });
    expect(decoupled.offPolicyWeight).toBeCloseTo(Math.exp(0.5), 4);
    expect(decoupled.offPolicyCapped).toBe(1);
    expect(decoupled.meanRatio).toBeCloseTo(1, 6);
    expect(step.offPolicyWeight).toBeNull();
    expect(await trainer.updateWeightsFromDisk(folder)).toMatchObject({ success: true });
    expect((await trainer.state()).policyVersion).toBe(saved.policyVersion);
    const folderTokenizer = await loadTokenizer(folder);
    expect(folderTokenizer.encode('6*7 → 42')).toEqual(tokenizer.encode('6*7 → 42'));
    expect(folderTokenizer.eosTokenId).toBe(256);
  });

  it('sends a GRPO step whose every prompt and interpreter token has loss mask 0 on the wire', async () => {
    const sandbox = await openTestSandbox();
    try {
      // A real multi-turn trajectory: the taught code block runs in the jail, the model goes on.
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
      const sent: Array<{ sequences: Array<{ input_ids: number[]; loss_mask: number[] }> }> = [];
      const recording = new TrainerClient({
        baseUrl: worker.url,
        fetch: async (input, init) => {
          sent.push(JSON.parse(String(init?.body)));
          return fetch(input, init);
        },
      });
      const step = await recording.grpoStep({ sequences: [sequence], learningRate: 0 });
      const [wire] = sent[0]!.sequences;
      // Walk the segments: prompt and tool tokens must be 0 on the wire, model tokens 1.
      let position = trajectory.prompt.tokenIds!.length;
      expect(wire!.loss_mask.slice(0, position).every((mask) => mask === 0)).toBe(true);
      let modelTokens = 0;
      for (const segment of trajectory.segments) {
        const ids = segment.tokenIds!;
        expect(wire!.input_ids.slice(position, position + ids.length)).toEqual(ids);
        const expected = segment.kind === 'tool' ? 0 : 1;
        expect(
          wire!.loss_mask.slice(position, position + ids.length).every((mask) => mask === expected),
        ).toBe(true);
        if (segment.kind === 'model') modelTokens += ids.length;
        position += ids.length;
      }
      expect(position).toBe(wire!.input_ids.length);
      // The worker trained on exactly the model's tokens.
      expect(step.tokens).toBe(modelTokens);
    } finally {
      await sandbox.close();
    }
  }, 60_000);

  it('rejects a malformed training batch with the field named', async () => {
    const error = await trainer
      .sftStep({ sequences: [{ inputIds: [1, 2, 3], lossMask: [1] }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TrainerRequestError);
    expect((error as TrainerRequestError).status).toBe(400);
    expect((error as Error).message).toContain('sequences[0].loss_mask');
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
      message: expect.stringContaining('not a preset'),
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
