/**
 * The `Trainer` contract: what a training loop (SFT, GRPO) needs from whoever owns the policy
 * weights. `TrainerClient` implements it over the PyTorch worker's HTTP routes; a distributed
 * trainer would implement the same. Getting new weights to the engines is the engine side's
 * job (`WeightUpdatableEngine.updateWeightsFromDisk` in src/engine/types.ts).
 */
import type {
  GrpoStepRequest,
  GrpoStepResult,
  SftStepRequest,
  SftStepResult,
  TrainerState,
} from './trainer-client.ts';

export interface Trainer {
  /** One SFT step: cross-entropy on tokens with loss mask 1. */
  sftStep(request: SftStepRequest): Promise<SftStepResult>;
  /** One GRPO step on group-normalised advantages, tool tokens masked. */
  grpoStep(request: GrpoStepRequest): Promise<GrpoStepResult>;
  /** Per-token log-probabilities of the current policy. */
  score(inputIds: number[][]): Promise<{ tokenLogprobs: number[][]; policyVersion: number }>;
  saveCheckpoint(path: string): Promise<{ path: string; policyVersion: number }>;
  loadCheckpoint(path: string): Promise<{ policyVersion: number; optimizerRestored: boolean }>;
  state(): Promise<TrainerState>;
}
