/**
 * One line of `problem-history.jsonl` (`rollout` and `train rl` with `--skip-history`): a
 * `group` line per decided group and a `skip` line per problem skipped before generation
 * (docs/records.md). `problem-history.ts` writes and reads them.
 */
import { z } from 'zod';
import { dropReasonSchema } from './group-record.ts';

const step = z
  .number()
  .int()
  .nonnegative()
  .meta({ description: 'the step the line belongs to', unit: 'steps' });
const problemId = z.string().meta({ description: 'the problem' });

export const problemGroupLineSchema = z
  .object({
    type: z.literal('group').meta({ description: 'group: a decided group; skip: a problem skipped' }),
    step,
    problemId,
    epoch: z.number().int().nonnegative().nullable().meta({
      description: 'the pass over the problem set the problem was drawn in (null: not known)',
      unit: 'epochs',
    }),
    outcome: z
      .enum(['kept', 'all-right', 'all-wrong', 'other'])
      .meta({ description: "group: the group's outcome" }),
    dropReason: dropReasonSchema.nullable().meta({ description: 'group: why it was dropped (null: kept)' }),
    solveRate: z.number().min(0).max(1).nullable().meta({
      description: 'group: graded-correct members over graded members (null: none graded)',
      unit: 'fraction 0–1',
    }),
    members: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: "group: the group's members", unit: 'trajectories' }),
  })
  .strict();

export const problemSkipLineSchema = z
  .object({
    type: z.literal('skip'),
    step,
    problemId,
    epoch: z.number().int().nonnegative(),
    streak: z.number().int().positive().meta({
      description: 'skip: the zero-variance streak that made the problem a candidate',
      unit: 'epochs',
    }),
    streakKind: z.enum(['all-right', 'all-wrong']).meta({ description: "skip: the streak's kind" }),
    probability: z
      .number()
      .min(0)
      .max(1)
      .meta({ description: 'skip: the skip probability drawn against', unit: 'fraction 0–1' }),
    reason: z.string().meta({ description: 'skip: why, in words' }),
  })
  .strict();

export const problemHistoryLineSchema = z.discriminatedUnion('type', [
  problemGroupLineSchema,
  problemSkipLineSchema,
]);

/** One decided group of the problem. */
export type ProblemGroupLine = z.infer<typeof problemGroupLineSchema>;
/** A problem skipped before any generation. */
export type ProblemSkipLine = z.infer<typeof problemSkipLineSchema>;
export type ProblemHistoryLine = z.infer<typeof problemHistoryLineSchema>;
