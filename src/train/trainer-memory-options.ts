/**
 * The memory options `train rl` hands to the trainer it starts: the micro-batch budget,
 * activation checkpointing, the LM head's chunk size, what a rank may hold, the ranks that
 * split a packed row (`--sp`) and CPU offload. A trainer given by URL was started elsewhere with
 * its own; asking for them then is an error, not a no-op.
 */
import type { RlConfig } from './rl-config.ts';
import type { TrainerServiceOptions } from './trainer-service.ts';

export type TrainerMemoryOptions = Required<
  Pick<
    TrainerServiceOptions,
    'microBatchTokens' | 'activationCheckpointing' | 'memoryLimitGb' | 'sequenceParallel' | 'cpuOffload'
  >
> &
  Pick<TrainerServiceOptions, 'logitsChunkTokens'>;

type MemoryConfig = Pick<
  RlConfig,
  | 'microBatchTokens'
  | 'activationCheckpointing'
  | 'logitsChunkTokens'
  | 'memoryLimitGb'
  | 'sequenceParallel'
  | 'cpuOffload'
>;

export function trainerMemoryOptions(config: MemoryConfig): TrainerMemoryOptions {
  return {
    microBatchTokens: config.microBatchTokens,
    activationCheckpointing: config.activationCheckpointing,
    ...(config.logitsChunkTokens === null ? {} : { logitsChunkTokens: config.logitsChunkTokens }),
    memoryLimitGb: config.memoryLimitGb,
    sequenceParallel: config.sequenceParallel,
    cpuOffload: config.cpuOffload,
  };
}

/** The flags given that only a trainer started here can honour (compared with their defaults). */
export function startedTrainerFlags(config: MemoryConfig, defaults: MemoryConfig): string[] {
  const flags: [string, boolean][] = [
    ['--activation-checkpointing', config.activationCheckpointing !== defaults.activationCheckpointing],
    ['--logits-chunk-tokens', config.logitsChunkTokens !== defaults.logitsChunkTokens],
    ['--memory-limit-gb', config.memoryLimitGb !== defaults.memoryLimitGb],
    ['--sp', config.sequenceParallel !== defaults.sequenceParallel],
    ['--cpu-offload', config.cpuOffload !== defaults.cpuOffload],
  ];
  return flags.filter(([, given]) => given).map(([flag]) => flag);
}
