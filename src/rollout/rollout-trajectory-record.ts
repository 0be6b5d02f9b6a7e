/**
 * One line of `trajectories.jsonl` of `rollout` and `train rl`: the Trajectory record
 * (docs/trajectory.md) each time a trajectory finishes or parks, the last line of an id being
 * its current record, with what the rollout adds in `meta` (docs/records.md). Other labels in
 * `meta` (the engine's chat messages for a text-only engine) pass through.
 */
import { z } from 'zod';
import { trajectorySchema } from '../trajectory/index.ts';

export const rolloutTrajectoryMetaSchema = z
  .object({
    rolloutStep: z.number().int().nonnegative().meta({
      description: 'the step in which this record was written (finished or parked)',
      unit: 'steps',
    }),
    reference: z.string().optional().meta({ description: "the problem's reference answer (once graded)" }),
    correct: z
      .boolean()
      .nullable()
      .optional()
      .meta({ description: 'graded correct, wrong, or null (grade missing)' }),
    reward: z.number().nullable().optional().meta({ description: 'its reward (null: missing, never zero)' }),
    missingReason: z
      .string()
      .nullable()
      .optional()
      .meta({ description: 'why the reward is missing (only then)' }),
  })
  .loose();

export const rolloutTrajectoryRecordSchema = trajectorySchema.safeExtend({
  meta: rolloutTrajectoryMetaSchema.meta({
    description: 'labels: the rollout step, and the grade once finished',
  }),
});

/** One line of a rollout's `trajectories.jsonl`. */
export type RolloutTrajectoryRecord = z.infer<typeof rolloutTrajectoryRecordSchema>;
