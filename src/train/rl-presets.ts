/**
 * Named sets of `train rl` defaults. `cpu`: a pretrained Hugging Face model (e.g. SmolLM2-135M)
 * on a few CPU cores, where a full-size step (8 groups × 8 trajectories up to the context
 * length, 80 held-out problems) takes an hour: trajectories up to 512 tokens (an arith tool
 * solution is ~200 with its prompt), 4 groups × 4, 20 held-out problems, and one segment per
 * trajectory — with the default two, every trajectory of the first step stops at 256 tokens and
 * is parked, so a one-step run trains nothing. A preset fills only the options not given on the
 * command line; it leaves the learning rate and checkpointing alone.
 */
import type { RlConfigInput } from './rl-config.ts';

export const RL_PRESETS = {
  cpu: { maxTokens: 512, batchSize: 4, groupSize: 4, evalProblems: 20, partialRollouts: 1 },
} as const satisfies Record<string, Partial<RlConfigInput>>;

export type RlPresetName = keyof typeof RL_PRESETS;
export const RL_PRESET_NAMES = Object.keys(RL_PRESETS) as RlPresetName[];
