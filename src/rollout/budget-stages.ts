/**
 * Growing budgets and segment limits, pure. Stages are (`maxTokens`, `maxToolCalls`,
 * `partialRollouts` = N); the next stage applies after a step whose truncation rate exceeds
 * the threshold (the paper: 10%), and the last stage stays. Segment limits default to
 * `L_seg = floor(maxTokens / N)` and `T_seg = max(1, floor(maxToolCalls / N))`.
 */
import type { Trajectory } from '../trajectory/trajectory.ts';
import type { BudgetStage } from './types.ts';

/** The stage index for the next step. */
export function nextStageIndex(options: {
  stage: number;
  truncationRate: number;
  threshold: number;
  stageCount: number;
}): number {
  const { stage, truncationRate, threshold, stageCount } = options;
  return truncationRate > threshold ? Math.min(stage + 1, stageCount - 1) : stage;
}

export type SegmentLimits = { tokens: number; toolCalls: number };

/** L_seg and T_seg of a stage; explicit values win. */
export function segmentLimits(
  stage: BudgetStage,
  overrides: { segmentTokens?: number | undefined; segmentToolCalls?: number | undefined } = {},
): SegmentLimits {
  return {
    tokens: overrides.segmentTokens ?? Math.max(1, Math.floor(stage.maxTokens / stage.partialRollouts)),
    toolCalls:
      overrides.segmentToolCalls ?? Math.max(1, Math.floor(stage.maxToolCalls / stage.partialRollouts)),
  };
}

/** A finished trajectory cut by its context or tool-call budget. */
export function isTruncated(trajectory: Pick<Trajectory, 'finish'>): boolean {
  const reason = trajectory.finish?.reason;
  return reason === 'max-tokens' || reason === 'max-tool-calls';
}

/** Truncated over finished; 0 when nothing finished. */
export function truncationRate(finished: readonly Pick<Trajectory, 'finish'>[]): number {
  if (finished.length === 0) return 0;
  return finished.filter(isTruncated).length / finished.length;
}
