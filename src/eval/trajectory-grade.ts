/**
 * How a run stores a trajectory's grade: in `trajectory.meta`, as `reference`, `correct`,
 * `reason` and `extracted`, beside whatever the solver put there. `readGrade` validates it back.
 */
import { z } from 'zod';
import type { GradeOptions, GradeResult, Grader } from '../grader/types.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';

const gradeMetaSchema = z.object({
  reference: z.string(),
  correct: z.boolean(),
  reason: z.string(),
  extracted: z.string().nullable(),
});

/** A grade as a run records it. */
export type StoredGrade = z.infer<typeof gradeMetaSchema>;

/** The trajectory with its grade written into `meta`. */
export function attachGrade(trajectory: Trajectory, grade: GradeResult, reference: string): Trajectory {
  return {
    ...trajectory,
    meta: {
      ...trajectory.meta,
      reference,
      correct: grade.correct,
      reason: grade.reason,
      extracted: grade.extracted,
    },
  };
}

/** The grade stored in a trajectory's meta, or null when it has none (or a malformed one). */
export function readGrade(trajectory: Trajectory): StoredGrade | null {
  const parsed = gradeMetaSchema.safeParse(trajectory.meta ?? {});
  return parsed.success ? parsed.data : null;
}

/**
 * Grades a trajectory's final answer (the agent's last `\boxed{}`) against the reference. A
 * trajectory without one is `no-answer` without asking the grader, which would otherwise read
 * the whole response as a bare answer.
 */
export async function gradeTrajectory(
  trajectory: Trajectory,
  reference: string,
  grader: Grader,
  options?: GradeOptions,
): Promise<GradeResult> {
  if (trajectory.answer === null) return { correct: false, extracted: null, reason: 'no-answer' };
  return grader(trajectory.answer, reference, options);
}
