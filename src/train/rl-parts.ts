/**
 * What `train rl` runs on, chosen by the command line and handed to `runRl`: engines behind a
 * router, a `Trainer`, a way to get the trainer's weights to the engines, a sandbox, the model's
 * tokenizer and prompt (`rl-cluster-parts.ts` starts them, for every model).
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
  /** Generation: one engine, or the router over the replicas. */
  engine: Engine & Partial<ReplicaStatsSource>;
  routerName: string;
  /** An engine URL that serves the current policy, for held-out evaluation, and its token. */
  evalUrl: string;
  evalApiKey?: string;
  trainer: Trainer;
  /** Gets the trainer's current weights (policy version `policyVersion`) to every engine. */
  syncWeights(policyVersion: number): Promise<RlWeightSync>;
  /**
   * Publishes the last synced policy as the run's `model/` folder (Hugging Face layout where the
   * model is one). Called after each synced step and once more at the end (`final`).
   */
  publishModel(folder: string, options: { final: boolean }): Promise<void>;
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
