/**
 * One line of `groups.jsonl` (`rollout` and `train rl`), one per decided group: its members'
 * rewards, grades and advantages, and whether it was kept or why it was dropped
 * (docs/records.md). `groupRecord` in `rollout-records.ts` writes it.
 */
import { z } from 'zod';

export const dropReasonSchema = z.enum(['all-correct', 'all-wrong', 'stale', 'rewards-missing', 'abandoned']);

export const groupRecordSchema = z
  .object({
    step: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: 'the step that decided the group', unit: 'steps' }),
    problemId: z.string().meta({ description: 'the problem the group sampled' }),
    trajectoryIds: z.array(z.string()).meta({ description: 'the members, as in trajectories.jsonl' }),
    rewards: z
      .array(z.number().nullable())
      .meta({ description: 'per member: its reward (null: missing, the grader could not run)' }),
    correct: z
      .array(z.boolean().nullable())
      .meta({ description: 'per member: graded correct, wrong, or null (grade missing)' }),
    advantages: z.array(z.number().nullable()).meta({
      description: 'per member: its advantage (null: reward missing, or the group dropped)',
    }),
    kept: z.boolean().meta({ description: 'the group was trained on' }),
    dropReason: dropReasonSchema.nullable().meta({ description: 'why it was dropped (null: kept)' }),
    oldestPolicyVersion: z.number().int().nullable().meta({
      description: "the oldest policy version among the members' model segments (null: none versioned)",
      unit: 'versions',
    }),
    abandonedIds: z.array(z.string()).optional().meta({
      description: 'dropped as abandoned: the members stopped unfinished (absent otherwise)',
    }),
    resampled: z
      .object({
        sampled: z
          .number()
          .int()
          .positive()
          .meta({ description: 'members sampled (K · n)', unit: 'trajectories' }),
        discarded: z
          .array(
            z
              .object({
                id: z.string().meta({ description: 'the member left out' }),
                reason: z.enum(['correct-more-faults', 'uniform']).meta({
                  description:
                    'a right answer with more tool errors or format faults than those kept, or drawn out uniformly',
                }),
                correct: z.boolean().nullable().meta({ description: 'its grade (null: missing)' }),
                toolErrors: z
                  .number()
                  .int()
                  .nonnegative()
                  .meta({ description: 'its failed code calls', unit: 'calls' }),
                formatFaults: z
                  .number()
                  .int()
                  .nonnegative()
                  .meta({ description: 'its format faults', unit: 'faults' }),
              })
              .strict(),
          )
          .meta({ description: 'the members left out, with why' }),
      })
      .strict()
      .optional()
      .meta({
        description: 'with --resample-on-correct: members sampled and those left out (absent otherwise)',
      }),
  })
  .strict();

/** One line of `groups.jsonl`. */
export type GroupRecord = z.infer<typeof groupRecordSchema>;
