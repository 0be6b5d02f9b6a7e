/**
 * The files of a `train rl` run folder beside the rollout's own (config.json, steps.jsonl, …),
 * and the type of an `evals.jsonl` line (its schema: `rl-eval-record.ts`).
 */
export const RL_FILES = {
  metrics: 'metrics.jsonl',
  evals: 'evals.jsonl',
  /** One line per weight sync: its times and the version each engine reported (`RlWeightSync`). */
  syncs: 'syncs.jsonl',
  checkpoints: 'checkpoints',
  /** One evaluation run folder per held-out evaluation (`eval-runs/step-00010`). */
  evalRuns: 'eval-runs',
} as const;

export {
  isMeasuredEval,
  type RlEvalMeasured,
  type RlEvalMissing,
  type RlEvalRecord,
} from './rl-eval-record.ts';
