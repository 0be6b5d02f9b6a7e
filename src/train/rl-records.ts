/**
 * The files of a `train rl` run folder beside the rollout's own (config.json, steps.jsonl, …),
 * and the shape of an `evals.jsonl` line.
 */
import type { HeldOutEvalResult } from './held-out-eval.ts';

export const RL_FILES = {
  metrics: 'metrics.jsonl',
  evals: 'evals.jsonl',
  /** One line per weight sync: its times and the version each engine reported (`RlWeightSync`). */
  syncs: 'syncs.jsonl',
  checkpoints: 'checkpoints',
  /** One evaluation run folder per held-out evaluation (`eval-runs/step-00010`). */
  evalRuns: 'eval-runs',
} as const;

/** One line of `evals.jsonl`: held-out figures after `step` steps. */
export type RlEvalRecord = {
  step: number;
  policyVersion: number;
  accuracy: number;
  codeFrequency: number;
  toolCallsPerTrajectory: number;
  responseTokensMean: number | null;
  byLevel: HeldOutEvalResult['byLevel'];
  problems: number;
  wallMs: number;
};
