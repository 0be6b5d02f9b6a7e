/**
 * One line of `train rl`'s `evals.jsonl`: the held-out figures after a step, or, for an
 * evaluation that could not run, a line with the reason in `missing` and null figures —
 * missing, never zero (docs/records.md).
 */
import { z } from 'zod';

const share = (description: string) => z.number().min(0).max(1).meta({ description, unit: 'fraction 0–1' });

export const levelAccuracySchema = z
  .object({
    level: z
      .union([z.number().int().nonnegative(), z.literal('all')])
      .meta({ description: 'the difficulty level' }),
    problems: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: 'problems of the level evaluated', unit: 'problems' }),
    correct: z.number().int().nonnegative().meta({ description: 'of them graded correct', unit: 'problems' }),
    accuracy: share('correct / problems (0 without problems)'),
  })
  .strict();

const evalLineFields = {
  step: z
    .number()
    .int()
    .nonnegative()
    .meta({ description: 'the step after which the policy was evaluated', unit: 'steps' }),
  policyVersion: z
    .number()
    .int()
    .nonnegative()
    .meta({ description: 'the policy version evaluated', unit: 'versions' }),
  problems: z
    .number()
    .int()
    .nonnegative()
    .meta({ description: 'held-out problems evaluated', unit: 'problems' }),
  wallMs: z.number().nonnegative().meta({ description: 'wall time of the evaluation', unit: 'ms' }),
};

/** An evaluation that ran. */
export const rlEvalRecordSchema = z
  .object({
    ...evalLineFields,
    accuracy: share('held-out problems graded correct, greedy, one sample each (null on a missing line)'),
    codeFrequency: share('held-out trajectories that ran at least one code block (null on a missing line)'),
    toolCallsPerTrajectory: z.number().nonnegative().meta({
      description: 'mean code calls per held-out trajectory (null on a missing line)',
      unit: 'calls',
    }),
    responseTokensMean: z.number().nonnegative().nullable().meta({
      description:
        'mean response length, model and interpreter tokens (null on a missing line, or not measured)',
      unit: 'tokens',
    }),
    byLevel: z
      .array(levelAccuracySchema)
      .meta({ description: 'accuracy per difficulty level (null on a missing line)' }),
  })
  .strict();

/** An evaluation that could not run: every figure null, and why. */
export const rlMissingEvalRecordSchema = z
  .object({
    ...evalLineFields,
    accuracy: z.null(),
    codeFrequency: z.null(),
    toolCallsPerTrajectory: z.null(),
    responseTokensMean: z.null(),
    byLevel: z.null(),
    missing: z.string().min(1).meta({
      description: 'why the evaluation did not run (only on such a line; its figures are then null)',
    }),
  })
  .strict();

export const rlEvalsLineSchema = z.union([rlEvalRecordSchema, rlMissingEvalRecordSchema]);

/** One evaluation that ran, as `evals.jsonl` records it. */
export type RlEvalMeasured = z.infer<typeof rlEvalRecordSchema>;
/**
 * An evaluation that did not run or finish (stopped by a signal, no problem graded in an
 * outage), as `evals.jsonl` records it: no figure, and the reason. Never read as 0%.
 */
export type RlEvalMissing = z.infer<typeof rlMissingEvalRecordSchema>;
/** Any line of `evals.jsonl`. */
export type RlEvalRecord = z.infer<typeof rlEvalsLineSchema>;

/** Whether an `evals.jsonl` line holds figures (an older line without `missing` does). */
export function isMeasuredEval(record: RlEvalRecord): record is RlEvalMeasured {
  return typeof record.accuracy === 'number' && !('missing' in record);
}
