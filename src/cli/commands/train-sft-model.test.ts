import { describe, expect, it } from 'vitest';
import { type HfSftFlags, hfSftConfigOf } from './train-sft-model.ts';

const flags: HfSftFlags = {
  model: '/models/smollm2',
  data: 'data.jsonl',
  out: 'run',
  steps: 40,
  batchSize: 8,
  checkpointEvery: 100,
  seed: 1,
  nproc: 1,
  microBatchTokens: 8192,
  maxSequenceTokens: 32768,
  sp: 1,
  prompt: 'instructed',
};

describe('train sft --model: the configuration from the flags', () => {
  it('gives a pretrained model a fine-tuning rate and a warmup of a tenth of the steps', () => {
    const config = hfSftConfigOf(flags);
    expect(config.learningRate).toBe(5e-5);
    expect(config.warmupSteps).toBe(4);
    expect(hfSftConfigOf({ ...flags, steps: 1000 }).warmupSteps).toBe(30);
    expect(config.dialect).toBe('tags');
    expect(config.maxMinutes).toBeNull();
  });

  it('keeps what the command line gave', () => {
    const config = hfSftConfigOf({
      ...flags,
      learningRate: 1e-3,
      warmupSteps: 0,
      minutes: 5,
      dialect: 'markdown',
      nproc: 4,
      sp: 2,
    });
    expect(config).toMatchObject({
      learningRate: 1e-3,
      warmupSteps: 0,
      maxMinutes: 5,
      dialect: 'markdown',
      processes: 4,
      sequenceParallel: 2,
    });
  });
});
