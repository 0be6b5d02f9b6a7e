/**
 * The train module: the trainer service and its client (every model, the byte model too), SFT
 * (data, schedule, checkpoints and resume, export, held-out evaluation through the agent loop,
 * training reports) and agentic RL (the rollout loop, GRPO steps, weight syncs to the engines).
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
export {
  type RlConfig,
  RlConfigError,
  type RlConfigInput,
  resolveRlConfig,
  rlConfigSchema,
} from './rl-config.ts';
export {
  levelAccuracySchema,
  rlEvalRecordSchema,
  rlEvalsLineSchema,
  rlMissingEvalRecordSchema,
} from './rl-eval-record.ts';
export { defaultRlLearningRate, safetensorsParameterCount } from './rl-learning-rate.ts';
export { type RlMetrics, type RlMetricsInput, rlMetrics, selfCorrected } from './rl-metrics.ts';
export { rlMetricsSchema } from './rl-metrics-record.ts';
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
export { type RlRunConfig, rlDefiningConfig, rlRunConfigSchema } from './rl-run-config.ts';
export { startRlParts } from './rl-start-parts.ts';
export { type RlSummaryOptions, rlSummaryTables } from './rl-summary-table.ts';
export { rlWeightSyncSchema } from './rl-weight-sync-record.ts';
export { type OffPolicyWeightOptions, rolloutCorrectionOptions } from './rollout-correction.ts';
export {
  FINE_TUNING_LEARNING_RATE,
  FROM_SCRATCH_LEARNING_RATE,
  type ModelFacts,
  type ResolvedSftConfig,
  resolveSftConfig,
  resolveSftDefaults,
  type SftConfig,
  SftConfigError,
  type SftConfigInput,
  sftConfigSchema,
} from './sft-config.ts';
export { buildSftExample, type SftExample } from './sft-example.ts';
export { type SftMetrics, sftMetricsSchema } from './sft-metrics.ts';
export { formatDuration, formatSftEvent, formatStepBar } from './sft-progress.ts';
export {
  batchOfStep,
  CALIBRATION_STEPS,
  INIT_MODEL_FOLDER,
  readMetrics,
  runSft,
  SFT_EVAL_DIR,
  SFT_MODEL_FOLDER,
  type SftEvent,
  type SftResult,
  SftRunError,
  type SftRunOptions,
  savedRunSteps,
} from './sft-run.ts';
export { type SftRunConfig, sftRunConfigSchema } from './sft-run-config.ts';
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
  startTrainerService,
  type TrainerService,
  type TrainerServiceOptions,
  TrainerStartError,
  TrainerStartStoppedError,
} from './trainer-service.ts';
export {
  type LossPoint,
  readTrainingReport,
  renderComparison,
  renderTrainingReport,
  TRAINING_REPORT_FILE,
  TRAINING_REPORT_MARKDOWN,
  type TrainingReport,
  TrainingReportMissingError,
  writeTrainingReport,
} from './training-report.ts';
export type {
  GrpoObjectiveOptions,
  GrpoSequence,
  GrpoStepRequest,
  GrpoStepResult,
  MetricsLogger,
  SftSequence,
  SftStepRequest,
  SftStepResult,
  Trainer,
  TrainerState,
} from './types.ts';
export { WandbLoggerError, WandbUnavailableError } from './wandb-logger.ts';
export {
  type PausableEngine,
  type PolicyExporter,
  syncWeightsFromDisk,
  WeightSyncError,
  type WeightSyncResult,
} from './weight-sync.ts';
