/**
 * The train module: the trainer client for the PyTorch worker's training routes, and SFT of
 * the embedded model (data, batches, schedule, checkpoints and resume, held-out evaluation
 * through the agent loop, training reports).
 */

export {
  DistributedTrainerClient,
  DistributedTrainerError,
  type DistributedTrainerState,
} from './distributed-trainer-client.ts';
export {
  type GroupEngine,
  openWeightUpdateGroup,
  syncWeightsDistributed,
  type WeightUpdateGroup,
} from './distributed-weight-sync.ts';
export {
  type GrpoBatch,
  type GrpoSequenceOptions,
  type GrpoSequenceSkip,
  grpoBatch,
  grpoSequence,
} from './grpo-sequences.ts';
export {
  evaluateHeldOut,
  type HeldOutEvalOptions,
  type HeldOutEvalResult,
  type LevelAccuracy,
} from './held-out-eval.ts';
export {
  batchOfStep,
  CALIBRATION_STEPS,
  HF_SFT_LEARNING_RATE,
  type HfSftConfig,
  HfSftError,
  type HfSftEvent,
  type HfSftMetrics,
  type HfSftResult,
  hfSftWarmupSteps,
  runHfSft,
  savedRunSteps,
} from './hf-sft-run.ts';
export { type LearningRateSchedule, learningRateAt } from './learning-rate-schedule.ts';
export {
  METRICS_LOGGER_KINDS,
  type MetricsLoggerKind,
  type MetricsLoggerOptions,
  metricScalars,
  openMetricsLogger,
  redactSecrets,
} from './metrics-logger.ts';
export { checkpointPath } from './rl-checkpoints.ts';
export { type ClusterPartsOptions, RlPartsError, startClusterParts } from './rl-cluster-parts.ts';
export { type ColocatedPartsOptions, startColocatedParts } from './rl-colocated-parts.ts';
export {
  type RlConfig,
  RlConfigError,
  type RlConfigInput,
  resolveRlConfig,
  rlConfigSchema,
  rlDefiningConfig,
} from './rl-config.ts';
export { defaultRlLearningRate, safetensorsParameterCount } from './rl-learning-rate.ts';
export { type RlMetrics, type RlMetricsInput, rlMetrics, selfCorrected } from './rl-metrics.ts';
export type { RlParts, RlWeightSync } from './rl-parts.ts';
export { RL_PRESET_NAMES, RL_PRESETS, type RlPresetName } from './rl-presets.ts';
export {
  DECONTAMINATION_FILE,
  type LoadRlProblemsOptions,
  loadRlProblems,
  type RlDecontamination,
  type RlProblemSet,
  type RlProblemSource,
  RlProblemsError,
  type RlRemovedProblem,
  rlProblemOrder,
  writeDecontaminationRecord,
} from './rl-problems.ts';
export {
  isMeasuredEval,
  RL_FILES,
  type RlEvalMeasured,
  type RlEvalMissing,
  type RlEvalRecord,
} from './rl-records.ts';
export {
  isRlRunFolder,
  type RlReportRun,
  readRlRun,
  renderRlReport,
  rlReportSections,
  writeRlReport,
} from './rl-report.ts';
export {
  type RlEvent,
  RlRunError,
  type RlRunOptions,
  runRl,
} from './rl-run.ts';
export { startRlParts } from './rl-start-parts.ts';
export { type RlSummaryOptions, rlSummaryTables } from './rl-summary-table.ts';
export { type OffPolicyWeightOptions, rolloutCorrectionOptions } from './rollout-correction.ts';
export { planSftBatches, type SftBatchPlan, type SftBatchPlanOptions } from './sft-batch-plan.ts';
export {
  resolveSftConfig,
  type SftConfig,
  SftConfigError,
  type SftConfigInput,
  sftConfigSchema,
} from './sft-config.ts';
export { buildSftExample, type SftExample } from './sft-example.ts';
export { formatDuration, formatSftEvent, formatStepBar } from './sft-progress.ts';
export {
  runSft,
  type SftEvent,
  SftInterruptedError,
  SftRunFolderError,
  type SftRunOptions,
} from './sft-run.ts';
export {
  readSftState,
  SFT_STATE_FILE,
  type SftState,
  SftStateError,
  sftStateSchema,
  writeSftState,
} from './sft-state.ts';
export { type BatchSequence, encodeTrainerBatch } from './trainer-batch.ts';
export {
  type MachineCapacity,
  machineCapacity,
  modelFp32Bytes,
  RANK_BASE_BYTES,
  trainerCapacityProblem,
  trainerMemoryBytes,
} from './trainer-capacity.ts';
export {
  type GrpoSequence,
  type GrpoStepRequest,
  type GrpoStepResult,
  type ServedModelInfo,
  type SftSequence,
  type SftStepRequest,
  type SftStepResult,
  TrainerClient,
  TrainerRequestError,
  type TrainerState,
} from './trainer-client.ts';
export {
  startTrainerService,
  type TrainerService,
  type TrainerServiceOptions,
  TrainerStartError,
  TrainerStartStoppedError,
} from './trainer-service.ts';
export {
  readTrainingReport,
  renderComparison,
  renderTrainingReport,
  TRAINING_REPORT_FILE,
  TRAINING_REPORT_MARKDOWN,
  type TrainingReport,
  TrainingReportMissingError,
  writeTrainingReport,
} from './training-report.ts';
export type { MetricsLogger, Trainer } from './types.ts';
export { WandbLoggerError, WandbUnavailableError } from './wandb-logger.ts';
export {
  type PausableEngine,
  type PolicyExporter,
  syncWeightsFromDisk,
  WeightSyncError,
  type WeightSyncResult,
} from './weight-sync.ts';
