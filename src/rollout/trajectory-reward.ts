/**
 * The reward of a finished trajectory, or null when its grade is missing (the grader could
 * not run). Reuses the grader module's composite reward
 * R = R_acc + 1[R_acc = 1] · min(R_max, α + β · N_code).
 */
import { type CompositeRewardConfig, compositeReward, countExecutedCode } from '../grader/rewards.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import type { Reward } from './types.ts';

export function rewardOrMissing(
  correct: boolean | null,
  trajectory: Pick<Trajectory, 'toolCalls'>,
  config: CompositeRewardConfig,
): Reward {
  if (correct === null) return null;
  return compositeReward({ accuracy: correct ? 1 : 0, codeCount: countExecutedCode(trajectory) }, config);
}
