/**
 * Group-normalised advantages (GRPO), pure.
 *
 * Normalisation: A_i = (r_i − mean(r)) / (std(r) + ε), mean and population std over the
 * group's present rewards; a missing reward (null) is left out and gets a null advantage. This
 * is the GRPO form the paper uses (it does not say which std; we take the population std, and
 * ε = 1e-6). Dr. GRPO drops the division by std (A_i = r_i − mean), which removes the bias
 * towards groups with small reward variance; `scale: 'mean-only'` gives that form.
 */
import type { Reward } from './types.ts';

export type AdvantageScale = 'std' | 'mean-only';

export type GroupAdvantageOptions = { scale?: AdvantageScale; epsilon?: number };

export function groupAdvantages(
  rewards: readonly Reward[],
  options: GroupAdvantageOptions = {},
): (number | null)[] {
  const { scale = 'std', epsilon = 1e-6 } = options;
  const present = rewards.filter((reward): reward is number => reward !== null);
  if (present.length === 0) return rewards.map(() => null);
  const mean = present.reduce((sum, reward) => sum + reward, 0) / present.length;
  const variance = present.reduce((sum, reward) => sum + (reward - mean) ** 2, 0) / present.length;
  const divisor = scale === 'std' ? Math.sqrt(variance) + epsilon : 1;
  return rewards.map((reward) => (reward === null ? null : (reward - mean) / divisor));
}
