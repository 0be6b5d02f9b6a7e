/**
 * One line of an evaluation's `trajectories.jsonl` (`eval`, the held-out evaluations of
 * `train rl`, the quickstarts' evaluations): a finished Trajectory record (docs/trajectory.md)
 * with its grade in `meta` (docs/records.md). Other labels in `meta` (the engine's name, the
 * quickstart stage) pass through.
 */
import type { z } from 'zod';
import { trajectorySchema } from '../trajectory/index.ts';
import { gradeMetaSchema } from './trajectory-grade.ts';

export const evalTrajectoryRecordSchema = trajectorySchema.safeExtend({
  meta: gradeMetaSchema.loose().meta({ description: 'labels: the grade, and what the runner adds' }),
});

/** One line of an evaluation's `trajectories.jsonl`. */
export type EvalTrajectoryRecord = z.infer<typeof evalTrajectoryRecordSchema>;
