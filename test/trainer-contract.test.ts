/**
 * One contract suite for the `Trainer` on every kind of model: the trainer service on the byte
 * model and on a random-init Qwen3, one process each (FSDP2 on two ranks is compared with one in
 * python/agentmath_train/test_distributed.py). The same
 * calls must mean the same thing on both: scores
 * per token with 0 at position 0, an on-policy GRPO step with ratio 1 that raises the
 * positive-advantage sequence, SFT that lowers the loss, and a checkpoint that restores weights
 * and policy version.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initHfModel } from '../src/model/index.ts';
import { startTrainerService, type Trainer, type TrainerService } from '../src/train/index.ts';

type Subject = {
  name: string;
  start: (folder: string) => Promise<{ trainer: Trainer; stop: () => Promise<void> }>;
};

const subjects: Subject[] = [
  {
    name: 'trainer (byte model, one process)',
    start: async (folder) => {
      const model = join(folder, 'byte');
      await initHfModel({ arch: 'byte-gpt', shape: 'test', out: model, seed: 4 });
      const service: TrainerService = await startTrainerService({ model, threads: 1 });
      return { trainer: service.client, stop: () => service.stop() };
    },
  },
  {
    name: 'trainer (Qwen3)',
    start: async (folder) => {
      const model = join(folder, 'qwen3');
      await initHfModel({ arch: 'qwen3', out: model, hidden: 32, seed: 4 });
      const service: TrainerService = await startTrainerService({ model, microBatchTokens: 64 });
      return { trainer: service.client, stop: () => service.stop() };
    },
  },
];

// Ids below 256 exist in both vocabularies.
const SEQUENCES = [
  [72, 101, 108, 108, 111, 32, 119, 111],
  [49, 50, 51],
  [97, 98, 99, 100, 101, 102, 103, 104, 105, 106],
];
const lossMask = (ids: number[]) => ids.map((_, position) => (position >= 2 ? 1 : 0));

describe.each(subjects)('Trainer contract: $name', (subject) => {
  let folder: string;
  let trainer: Trainer;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'agentmath-trainer-contract-'));
    ({ trainer, stop } = await subject.start(folder));
  }, 300_000);

  afterAll(async () => {
    await stop?.();
    await rm(folder, { recursive: true, force: true });
  });

  it('scores every token, 0 at position 0', async () => {
    const { tokenLogprobs, policyVersion } = await trainer.score(SEQUENCES);
    expect(policyVersion).toBe((await trainer.state()).policyVersion);
    expect(tokenLogprobs.map((row) => row.length)).toEqual(SEQUENCES.map((ids) => ids.length));
    for (const row of tokenLogprobs) {
      expect(row[0]).toBe(0);
      for (const value of row.slice(1)) expect(value).toBeLessThan(0);
    }
  }, 120_000);

  it('takes an on-policy GRPO step with ratio 1 that raises the positive-advantage sequence', async () => {
    const before = await trainer.score(SEQUENCES);
    const result = await trainer.grpoStep({
      sequences: SEQUENCES.map((inputIds, index) => ({
        inputIds,
        lossMask: lossMask(inputIds),
        advantage: index === 0 ? 1 : -1,
        oldLogprobs: before.tokenLogprobs[index]!,
      })),
      learningRate: 1e-2,
      temperature: 1,
    });
    expect(result.meanRatio).toBeCloseTo(1, 4);
    expect(result.clipFraction).toBe(0);
    expect(result.skipped).toBe(false);
    expect(result.policyVersion).toBe(before.policyVersion + 1);
    const after = await trainer.score([SEQUENCES[0]!]);
    const sum = (row: number[]) => row.slice(2).reduce((total, value) => total + value, 0);
    expect(sum(after.tokenLogprobs[0]!)).toBeGreaterThan(sum(before.tokenLogprobs[0]!));
  }, 120_000);

  it('lowers the SFT loss on a batch it steps on twice', async () => {
    const sequences = SEQUENCES.map((inputIds) => ({ inputIds, lossMask: lossMask(inputIds) }));
    const first = await trainer.sftStep({ sequences, learningRate: 1e-2 });
    const second = await trainer.sftStep({ sequences, learningRate: 1e-2 });
    expect(first.tokens).toBe(SEQUENCES.reduce((sum, ids) => sum + ids.length - 2, 0));
    expect(second.loss).toBeLessThan(first.loss);
  }, 120_000);

  it('restores weights and policy version from a checkpoint', async () => {
    const path = join(folder, 'checkpoint');
    const saved = await trainer.saveCheckpoint(path);
    const scoresAtSave = await trainer.score(SEQUENCES);
    await trainer.sftStep({
      sequences: SEQUENCES.map((inputIds) => ({ inputIds, lossMask: lossMask(inputIds) })),
      learningRate: 5e-2,
    });
    expect((await trainer.state()).policyVersion).toBe(saved.policyVersion + 1);
    const loaded = await trainer.loadCheckpoint(path);
    expect(loaded.policyVersion).toBe(saved.policyVersion);
    const restored = await trainer.score(SEQUENCES);
    restored.tokenLogprobs.forEach((row, index) => {
      row.forEach((value, position) => {
        expect(value).toBeCloseTo(scoresAtSave.tokenLogprobs[index]![position]!, 4);
      });
    });
  }, 120_000);
});
