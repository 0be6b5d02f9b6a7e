/**
 * How a run stores a trajectory's grade: in `trajectory.meta`, as `reference`, `correct`,
 * `reason` and `extracted` (and `gradeCause` for a grade without a verdict, `correct: null`),
 * beside whatever the solver put there. `readGrade` validates it back.
 */
import { z } from 'zod';
import type { GradeOptions, GradeResult, Grader } from '../grader/types.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';

/** The grade in a trajectory's `meta` (a field of the `trajectories.jsonl` contract, docs/records.md). */
export const gradeMetaSchema = z.object({
  reference: z.string().meta({ description: "the problem's reference answer" }),
  /** null: the grade has no verdict (`grader-unavailable`); it is graded again on resume. */
  correct: z.boolean().nullable().meta({
    description: 'graded correct, wrong, or null: no verdict (the grader was down), graded again on resume',
  }),
  reason: z.string().meta({ description: "the grader's reason (exact, symbolic, no-answer, …)" }),
  extracted: z.string().nullable().meta({ description: 'the answer as the grader read it (null: none)' }),
  gradeCause: z.string().optional().meta({ description: 'why there is no verdict (only with correct null)' }),
});

/** A grade as a run records it. */
export type StoredGrade = z.infer<typeof gradeMetaSchema>;

/** The trajectory with its grade written into `meta` (replacing an earlier grade). */
export function attachGrade(trajectory: Trajectory, grade: GradeResult, reference: string): Trajectory {
  const { gradeCause: _earlier, ...meta } = trajectory.meta ?? {};
  return {
    ...trajectory,
    meta: {
      ...meta,
      reference,
      correct: grade.correct,
      reason: grade.reason,
      extracted: grade.extracted,
      ...(grade.correct === null ? { gradeCause: grade.cause } : {}),
    },
  };
}

/** Whether a stored grade is a verdict (true or false), not an outage still to be graded. */
export function hasVerdict(grade: StoredGrade | null): boolean {
  return grade !== null && grade.correct !== null;
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
