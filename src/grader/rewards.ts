/**
 * Reward functions for RL, pure and server-free.
 *
 * Accuracy: R_acc = 1 when the grade is correct, else 0.
 * Composite (the paper's tool-use reward): R = R_acc + 1[R_acc = 1] · min(R_max, α + β · N_code),
 * where N_code is the number of code blocks the trajectory executed (its tool calls). A wrong
 * answer earns nothing for tool use, so the bonus cannot be farmed by running code alone.
 *
 * A grade without a verdict (`correct: null`, reason `grader-unavailable`: the sandbox of the
 * symbolic step was down) has no reward: both functions return null ("missing"), never 0, so an
 * outage is not taught as a wrong answer. The grade itself carries the reason and its cause.
 */
import { z } from 'zod';
import type { Trajectory } from '../trajectory/trajectory.ts';
import type { GradeResult } from './types.ts';

/** α, β, R_max of the composite reward. Defaults: α = 0.1, β = 0.02, R_max = 0.2. */
export const compositeRewardConfigSchema = z
  .object({
    /** α: the bonus for a correct answer that used the tool at all (also applies at N_code = 0). */
    alpha: z.number().min(0).default(0.1),
    /** β: the bonus per executed code block. */
    beta: z.number().min(0).default(0.02),
    /** R_max: the cap on the tool bonus. */
    rMax: z.number().min(0).default(0.2),
  })
  .strict();

export type CompositeRewardConfig = z.infer<typeof compositeRewardConfigSchema>;

/** 1 for a correct grade, 0 for a wrong one, null (missing) for a grade without a verdict. */
export function accuracyReward(grade: Pick<GradeResult, 'correct'>): number | null {
  if (grade.correct === null) return null;
  return grade.correct ? 1 : 0;
}

/** N_code: the executed code blocks of a trajectory (its tool calls, whatever their outcome). */
export function countExecutedCode(trajectory: Pick<Trajectory, 'toolCalls'>): number {
  return trajectory.toolCalls.length;
}

/** R = R_acc + 1[R_acc = 1] · min(R_max, α + β · N_code). */
export function compositeReward(
  input: { accuracy: number; codeCount: number },
  config: CompositeRewardConfig = compositeRewardConfigSchema.parse({}),
): number {
  const { accuracy, codeCount } = input;
  const bonus = accuracy === 1 ? Math.min(config.rMax, config.alpha + config.beta * codeCount) : 0;
  return accuracy + bonus;
}

/** The composite reward of a graded trajectory; null (missing) for a grade without a verdict. */
export function trajectoryReward(
  grade: Pick<GradeResult, 'correct'>,
  trajectory: Pick<Trajectory, 'toolCalls'>,
  config?: CompositeRewardConfig,
): number | null {
  const accuracy = accuracyReward(grade);
  if (accuracy === null) return null;
  return compositeReward({ accuracy, codeCount: countExecutedCode(trajectory) }, config);
}
