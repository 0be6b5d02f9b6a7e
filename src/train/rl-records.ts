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

/** One line of `evals.jsonl` for an evaluation that ran: held-out figures after `step` steps. */
export type RlEvalMeasured = {
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

/**
 * One line of `evals.jsonl` for an evaluation that did not run or finish (stopped by a signal,
 * no problem graded in an outage): no figure — `accuracy` null, `problems` 0 — and `missing`,
 * the reason. Never read as 0%.
 */
export type RlEvalMissing = {
  step: number;
  policyVersion: number;
  accuracy: null;
  problems: 0;
  missing: string;
  wallMs: number;
};

/** One line of `evals.jsonl`. */
export type RlEvalRecord = RlEvalMeasured | RlEvalMissing;

/** Whether an `evals.jsonl` line holds figures (an older line without `missing` does). */
export function isMeasuredEval(record: RlEvalRecord): record is RlEvalMeasured {
  return typeof record.accuracy === 'number' && !('missing' in record);
}
