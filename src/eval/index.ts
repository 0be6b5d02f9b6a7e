/**
 * The evaluation harness: benchmarks (JSONL, Parquet, presets, built-ins), the resumable
 * concurrent runner, metrics (avg@k, pass@k, maj@k, tool use, lengths) and the HTML report.
 */
export { resolveDataDir } from './benchmark-data-dir.ts';
export { loadBenchmarkJsonl, parseBenchmarkJsonl } from './benchmark-jsonl.ts';
export { loadBenchmarkParquet, parseBenchmarkParquet } from './benchmark-parquet.ts';
export {
  type BenchmarkProblem,
  DEFAULT_FIELD_NAMES,
  type FieldMapping,
  mapBenchmarkRow,
} from './benchmark-problem.ts';
export { BUILTIN_BENCHMARKS } from './builtin-benchmarks.ts';
export { escapeHtml } from './escape-html.ts';
export {
  type EvalRunFigures,
  evalComparisonTable,
  readEvalRunFigures,
} from './eval-comparison.ts';
export {
  BenchmarkFormatError,
  BenchmarkNotFoundError,
  EvalInfrastructureError,
  EvalOutputExistsError,
  EvalResumeMismatchError,
  EvalRunFormatError,
} from './eval-errors.ts';
export {
  type EvalCommandConfig,
  type EvalRunnerConfig,
  evalAgentConfigSchema,
  evalCommandConfigSchema,
  evalRunnerConfigSchema,
  evalRunnerConfigShape,
  recordedBudgetsSchema,
  recordedSamplingSchema,
} from './eval-run-config.ts';
export {
  type EvalProgress,
  type EvalRunOptions,
  type EvalRunResult,
  type GradeTrajectory,
  runEval,
  type SolveTrajectory,
} from './eval-runner.ts';
export { evalSamplingSchema } from './eval-sampling.ts';
export { type EvalTrajectoryRecord, evalTrajectoryRecordSchema } from './eval-trajectory-record.ts';
export { compact, type Histogram, histogram } from './histogram.ts';
export {
  BENCHMARK_PRESETS,
  type BenchmarkSource,
  type BuiltinBenchmark,
  type LoadBenchmarkOptions,
  type LoadedBenchmark,
  loadBenchmark,
} from './load-benchmark.ts';
export {
  type AnswerEquivalence,
  type MajorityVote,
  majorityVote,
  type VoteCandidate,
} from './majority-vote.ts';
export { averageAccuracy, passAtK, reportedKs } from './pass-at-k.ts';
export {
  createProgressReporter,
  formatDuration,
  formatProgress,
  type ProgressReporter,
} from './progress-reporter.ts';
export { type ReportRun, renderReport } from './report-html.ts';
export {
  folderHasEntries,
  RUN_FILES,
  readRunJson,
  readRunTrajectories,
  writeRunJson,
} from './run-folder.ts';
export { readRunForReport, writeRunReport } from './run-report.ts';
export { type ProblemSummary, plannedTrajectories, type RunSummary, summarizeRun } from './run-summary.ts';
export {
  lengthStatsSchema,
  majorityVoteSchema,
  problemSummarySchema,
  runSummarySchema,
  toolUseStatsSchema,
} from './run-summary-record.ts';
export { type BarChartOptions, type BarSeries, barChart, niceStep, SERIES_COLORS } from './svg-bar-chart.ts';
export {
  finishReasonCounts,
  type LengthStats,
  lengthStats,
  lengthUnit,
  percentile,
  responseLength,
  type ToolUseStats,
  toolUseStats,
} from './tool-use-stats.ts';
export {
  attachGrade,
  gradeMetaSchema,
  gradeTrajectory,
  readGrade,
  type StoredGrade,
} from './trajectory-grade.ts';
