/** Synthetic task families with programmatic reference answers and written solutions. */
export {
  ARITH_EVAL_SEED,
  ARITH_KINDS,
  ARITH_LEVELS,
  type ArithBenchmarkItem,
  type ArithKind,
  type ArithProblem,
  type ArithSetOptions,
  ArithSpaceExhaustedError,
  type ArithSpec,
  type ArithSplit,
  arithAnswerValue,
  arithBenchmark,
  arithEvalProblems,
  arithProblemId,
  arithSplitOf,
  arithStatement,
  arithTrainProblems,
  canonicalArith,
  generateArithSpec,
  taskProblemOf,
  writeArithTextSolution,
} from './arith/index.ts';
export {
  createSeededRandom,
  type Random,
  randomBigInt,
  randomDigits,
  randomInteger,
} from './seeded-random.ts';
export type { SolutionSegment, TaskProblem, TaskSolution } from './types.ts';
