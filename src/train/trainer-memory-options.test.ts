import { describe, expect, it } from 'vitest';
import { resolveRlConfig } from './rl-config.ts';
import { startedTrainerFlags, trainerMemoryOptions } from './trainer-memory-options.ts';
import { trainerServeArgs } from './trainer-service.ts';

const defaults = resolveRlConfig({ init: '/models/q' });

describe('the memory options train rl hands to its trainer', () => {
  it('reach the trainer command line', () => {
    const config = resolveRlConfig({
      init: '/models/q',
      microBatchTokens: 32_768,
      activationCheckpointing: true,
      logitsChunkTokens: 256,
      memoryLimitGb: 70,
      sequenceParallel: 2,
      cpuOffload: true,
    });
    const args = trainerServeArgs({
      model: config.init,
      processes: 2,
      host: '127.0.0.1',
      port: 0,
      ...trainerMemoryOptions(config),
    });
    const serve = args.slice(args.indexOf('serve'));
    expect(serve).toContain('--activation-checkpointing');
    expect(
      serve.slice(serve.indexOf('--micro-batch-tokens'), serve.indexOf('--micro-batch-tokens') + 2),
    ).toEqual(['--micro-batch-tokens', '32768']);
    expect(
      serve.slice(serve.indexOf('--logits-chunk-tokens'), serve.indexOf('--logits-chunk-tokens') + 2),
    ).toEqual(['--logits-chunk-tokens', '256']);
    expect(serve.slice(serve.indexOf('--memory-limit-gb'), serve.indexOf('--memory-limit-gb') + 2)).toEqual([
      '--memory-limit-gb',
      '70',
    ]);
    expect(serve.slice(serve.indexOf('--sp'), serve.indexOf('--sp') + 2)).toEqual(['--sp', '2']);
    expect(serve).toContain('--cpu-offload');
  });

  it('leave the defaults to the trainer when not given', () => {
    const args = trainerServeArgs({
      model: '/m',
      processes: 1,
      host: '127.0.0.1',
      port: 0,
      ...trainerMemoryOptions(defaults),
    });
    expect(args).not.toContain('--activation-checkpointing');
    expect(args).not.toContain('--memory-limit-gb');
    expect(args).not.toContain('--sp');
    expect(args).not.toContain('--cpu-offload');
    // The trainer sizes the LM-head chunk by the model's vocabulary (default_chunk_tokens).
    expect(args).not.toContain('--logits-chunk-tokens');
  });

  it('are named when given for a trainer started elsewhere', () => {
    expect(startedTrainerFlags(defaults, defaults)).toEqual([]);
    const given = resolveRlConfig({
      init: '/m',
      activationCheckpointing: true,
      logitsChunkTokens: 0,
      sequenceParallel: 2,
      cpuOffload: true,
    });
    expect(startedTrainerFlags(given, defaults)).toEqual([
      '--activation-checkpointing',
      '--logits-chunk-tokens',
      '--sp',
      '--cpu-offload',
    ]);
  });
});
