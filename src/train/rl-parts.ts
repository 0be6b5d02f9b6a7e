/**
 * What `train rl` runs on, chosen by the command line and handed to `runRl` (which never asks
 * which kind it got): engines behind a router, a `Trainer`, a way to get the trainer's weights
 * to the engines, a sandbox, the model's tokenizer and prompt. Two kinds exist:
 * - colocated (`rl-colocated-parts.ts`): the embedded byte model, one PyTorch worker that both
 *   serves and trains, so the engine holds the new weights the moment a step ends;
 * - cluster (`rl-cluster-parts.ts`): a Hugging Face model on engine replicas (embedded workers
 *   started here, or SGLang / vLLM servers by URL) and the distributed trainer (started here
 *   under torchrun, or by URL), weights synced from disk after each step.
 */
import type { SessionPark } from '../agent/index.ts';
import type { PromptBuilder } from '../agent/prompt-builder.ts';
import type { Tokenizer } from '../engine/tokenizer.ts';
import type { Engine } from '../engine/types.ts';
import type { Dialect } from '../protocol/index.ts';
import type { ReplicaStatsSource } from '../rollout/types.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import type { RlWeightSync } from './rl-weight-sync-record.ts';
import type { Trainer } from './types.ts';

export type { RlWeightSync };

export type RlParts = {
  /** What `train rl` reports the parts as (`colocated`, `cluster`). */
  kind: 'colocated' | 'cluster';
  /** Generation: one engine, or the router over the replicas. */
  engine: Engine & Partial<ReplicaStatsSource>;
  routerName: string;
  /** An engine URL that serves the current policy, for held-out evaluation, and its token. */
  evalUrl: string;
  evalApiKey?: string;
  trainer: Trainer;
  /**
   * Gets the trainer's current weights (policy version `policyVersion`) to every engine; null
   * when the engines share the trainer's weights (nothing to send).
   */
  syncWeights(policyVersion: number): Promise<RlWeightSync | null>;
  /**
   * Publishes the last synced policy as the run's `model/` folder (Hugging Face layout where the
   * model is one). Called after each synced step and once more at the end (`final`).
   */
  publishModel(folder: string, options: { final: boolean }): Promise<void>;
  /** Whether rollout may run beside training (false when engines and trainer share weights). */
  canOverlap: boolean;
  tokenizer: Tokenizer;
  dialect: Dialect;
  prompt: PromptBuilder;
  /** Prompt + response tokens the model takes. */
  contextTokens: number;
  parameters: number | null;
  sandbox: SandboxProvider;
  park: SessionPark;
  /** Stops everything these parts started (engines, trainer, sandbox); safe to call twice. */
  close(): Promise<void>;
};
