/**
 * The reward of a finished trajectory, or null when its grade is missing (the grader could
 * not run). `composite` reuses the grader module's composite reward
 * R = R_acc + 1[R_acc = 1] · min(R_max, α + β · N_code); `accuracy` is R_acc alone.
 */
import { type CompositeRewardConfig, compositeReward, countExecutedCode } from '../grader/rewards.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import type { Reward } from './types.ts';

export type RewardKind = 'composite' | 'accuracy';

export function rewardOrMissing(
  correct: boolean | null,
  trajectory: Pick<Trajectory, 'toolCalls'>,
  config: CompositeRewardConfig,
  kind: RewardKind = 'composite',
): Reward {
  if (correct === null) return null;
  if (kind === 'accuracy') return correct ? 1 : 0;
  return compositeReward({ accuracy: correct ? 1 : 0, codeCount: countExecutedCode(trajectory) }, config);
}
