/**
 * The rollout system: one step of many trajectories at once (request-level scheduling or the
 * static synchronous baseline), agent partial rollout, GRPO groups, rewards, advantages,
 * adaptive batches and growing budgets.
 */
export {
  isTruncated,
  nextStageIndex,
  type SegmentLimits,
  segmentLimits,
  truncationRate,
} from './budget-stages.ts';
export { type AdvantageScale, type GroupAdvantageOptions, groupAdvantages } from './group-advantages.ts';
export { type GroupDropReason, type GroupFilterInput, groupDropReason } from './group-filter.ts';
export {
  budgetStageSchema,
  PAPER_BUDGET_STAGES,
  type RolloutConfig,
  type RolloutConfigInput,
  rolloutConfigSchema,
} from './rollout-config.ts';
export {
  type GroupRecord,
  groupRecord,
  ROLLOUT_FILES,
  type RolloutCheckpoint,
  RolloutRecordError,
  RolloutRecords,
  readCheckpoint,
  truncateStepFile,
  truncateToStep,
} from './rollout-records.ts';
export {
  assertRunIdentity,
  checkRunIdentity,
  RolloutRunConfigError,
  type RolloutRunOptions,
  type RolloutRunResult,
  runRollout,
} from './rollout-run.ts';
export { initialRolloutState, runRolloutStep } from './run-rollout-step.ts';
export { isStale, oldestPolicyVersion } from './staleness.ts';
export { rewardOrMissing } from './trajectory-reward.ts';
export { barrierEngine, TurnBarrier } from './turn-barrier.ts';
export type {
  BudgetStage,
  DropReason,
  GroupOutcome,
  ParkedGroup,
  ProblemSource,
  ReplicaStatsSource,
  ReplicaStepStats,
  Reward,
  RolloutEvent,
  RolloutMode,
  RolloutParts,
  RolloutProblem,
  RolloutState,
  RolloutStepInput,
  RolloutStepResult,
  StalePolicy,
  StepStats,
} from './types.ts';
