/**
 * `config.json` of a `train rl` run folder: what defines the run, written at its first start;
 * `--resume` refuses a command line that differs in any of it (docs/records.md). It is the
 * resolved configuration of `rl-config.ts` without what only places or sizes the run (where
 * engines, trainer and sandboxes run, how the trainer holds a step in memory, the step count,
 * checkpoint cadence): each field is the value of the `train rl` flag of that name (docs/rl.md).
 */
import { z } from 'zod';
import { type RlConfig, rlConfigSchema } from './rl-config.ts';

/** Where things run may change between a stop and a resume; what is trained may not. */
const PLACEMENT_FIELDS = {
  steps: true,
  engines: true,
  replicas: true,
  maxInFlight: true,
  trainerUrl: true,
  weightSyncAddress: true,
  trainerProcs: true,
  sandboxes: true,
  sandboxWorkers: true,
  sandboxPreload: true,
  trainThreads: true,
  // How the trainer holds a step in memory changes nothing it computes.
  activationCheckpointing: true,
  logitsChunkTokens: true,
  memoryLimitGb: true,
  sequenceParallel: true,
  cpuOffload: true,
  checkpointEvery: true,
  keepCheckpoints: true,
} as const;

export const rlRunConfigSchema = rlConfigSchema
  .omit(PLACEMENT_FIELDS)
  .extend({ command: z.literal('train rl').meta({ description: 'the command that wrote the run' }) })
  .strict();

/** What `config.json` of a `train rl` run holds. */
export type RlRunConfig = z.infer<typeof rlRunConfigSchema>;

/** What defines a run: a resume with anything else different is refused (steps may grow). */
export function rlDefiningConfig(config: RlConfig): RlRunConfig {
  const defining: Record<string, unknown> = { ...config };
  for (const field of Object.keys(PLACEMENT_FIELDS)) delete defining[field];
  return { command: 'train rl', ...(defining as Omit<RlConfig, keyof typeof PLACEMENT_FIELDS>) };
}
