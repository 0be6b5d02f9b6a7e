/** The `arith` task family: exact-arithmetic problems, their splits, and solution writers. */

export { groupDigits } from './arith-digit-groups.ts';
export {
  ARITH_ALL_LEVELS,
  ARITH_LEVELS,
  ARITH_MAX_LEVEL,
  ARITH_SPACED_LEVEL,
  generateArithSpec,
} from './arith-generator.ts';
export {
  ARITH_EVAL_SEED,
  type ArithBenchmarkItem,
  type ArithSetOptions,
  ArithSpaceExhaustedError,
  arithBenchmark,
  arithEvalProblems,
  arithTrainProblems,
} from './arith-problems.ts';
export {
  ArithDatasetFileError,
  type ArithDatasetProgress,
  type ArithDatasetSkip,
  type ArithSftDatasetOptions,
  type ArithSftDatasetSummary,
  writeArithSftDataset,
} from './arith-sft-dataset.ts';
export {
  ARITH_KINDS,
  type ArithKind,
  type ArithNotation,
  type ArithProblem,
  type ArithSpec,
  arithAnswerValue,
  arithStatement,
  canonicalArith,
  statedNumbers,
} from './arith-spec.ts';
export { type ArithSplit, arithProblemId, arithSplitOf } from './arith-split.ts';
export { taskProblemOf, writeArithTextSolution } from './arith-text-solution.ts';
export { type ArithToolPlan, arithToolPlan } from './arith-tool-plan.ts';
export {
  ArithDialectMismatchError,
  type ArithToolSolutionOptions,
  type ArithToolSolutionResult,
  DEFAULT_FAILED_FIRST_SHARE,
  showsFailedFirstAttempt,
  writeArithToolSolution,
} from './arith-tool-solution.ts';
