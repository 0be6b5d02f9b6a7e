/** Synthetic task families with programmatic reference answers and written solutions. */
export * from './arith/index.ts';
export {
  createSeededRandom,
  type Random,
  randomBigInt,
  randomDigits,
  randomInteger,
} from './seeded-random.ts';
export type { SolutionSegment, TaskProblem, TaskSolution } from './types.ts';
