/**
 * `--rollout-correction tis|mis` as the trainer's off-policy weight options, pure. With the
 * decoupled objective (`--proximal recompute`) every trained token is weighted by
 * w = π_prox / π_engine, the trainer's probability of the token before the step over the
 * engine's: numeric mismatch (bf16 kernels) and staleness both show in w. TIS (truncated
 * importance sampling; verl `rollout_is: token` with `rollout_is_threshold`, slime `--use-tis`)
 * uses min(w, upper); MIS (masked: verl's token-level rejection between `rollout_rs_threshold`
 * and `rollout_rs_threshold_lower`, default 1 / upper) uses w inside [lower, upper] and drops
 * the token's gradient outside it. Read in verl's docs/algo/rollout_corr.md (2025-10) and
 * slime's `--use-tis`; ours is token level only.
 */
import type { RlConfig } from './rl-config.ts';

export type OffPolicyWeightOptions = {
  offPolicyCap: number;
  offPolicyMode: 'truncate' | 'mask';
  offPolicyFloor: number;
};

export function rolloutCorrectionOptions(
  config: Pick<RlConfig, 'rolloutCorrection' | 'rolloutIsThreshold' | 'rolloutIsThresholdLower'>,
): OffPolicyWeightOptions {
  if (config.rolloutCorrection === 'tis') {
    return { offPolicyCap: config.rolloutIsThreshold, offPolicyMode: 'truncate', offPolicyFloor: 0 };
  }
  return {
    offPolicyCap: config.rolloutIsThreshold,
    offPolicyMode: 'mask',
    offPolicyFloor: config.rolloutIsThresholdLower ?? 1 / config.rolloutIsThreshold,
  };
}
