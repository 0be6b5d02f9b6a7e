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
export { dropReasonSchema, groupRecordSchema } from './group-record.ts';
export {
  historyOutcome,
  PROBLEM_HISTORY_FILE,
  type ProblemGroupLine,
  ProblemHistory,
  type ProblemHistoryLine,
  type ProblemSkipLine,
} from './problem-history.ts';
export {
  problemGroupLineSchema,
  problemHistoryLineSchema,
  problemSkipLineSchema,
} from './problem-history-record.ts';
export { ProblemSkipper, type ProblemSkipperOptions } from './problem-skipper.ts';
export {
  formatFaultCount,
  type ResampleChoice,
  type ResampleMember,
  resampleOnCorrect,
  stringDraw,
  toolErrorCount,
} from './resample-on-correct.ts';
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
export { type RolloutRunConfig, rolloutRunConfigSchema } from './rollout-run-config.ts';
export {
  type RolloutTrajectoryRecord,
  rolloutTrajectoryMetaSchema,
  rolloutTrajectoryRecordSchema,
} from './rollout-trajectory-record.ts';
export { initialRolloutState, runRolloutStep, sampledGroupSize } from './run-rollout-step.ts';
export {
  DEFAULT_SKIP_RULE,
  type HistoryOutcome,
  type SkipRuleOptions,
  skipProbability,
  skipRuleProblem,
  zeroVarianceStreak,
} from './skip-rule.ts';
export { isStale, oldestPolicyVersion } from './staleness.ts';
export { replicaStepStatsSchema, stepStatsSchema } from './step-record.ts';
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
