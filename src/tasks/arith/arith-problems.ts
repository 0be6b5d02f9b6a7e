/**
 * Problem sets: training problems from a seed, held-out evaluation problems, and the fixed
 * `arith` benchmark. Slot i of a set asks for the (kind, level) pair i in a fixed rotation, so
 * every set is balanced and a longer set extends a shorter one with the same seed. Candidates
 * on the other side of the split (see arith-split.ts) or already in the set are drawn again.
 */
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { createSeededRandom, type Random } from '../seeded-random.ts';
import { ARITH_LEVELS, generateArithSpec } from './arith-generator.ts';
import {
  ARITH_KINDS,
  type ArithKind,
  type ArithProblem,
  arithAnswerValue,
  arithStatement,
} from './arith-spec.ts';
import { type ArithSplit, arithProblemId, arithSplitOf } from './arith-split.ts';

/** Thrown when a (kind, level) pair has no unused problem left on the requested side. */
export class ArithSpaceExhaustedError extends AgentMathError {
  constructor(kind: ArithKind, level: number, split: ArithSplit) {
    super(
      'TASKS_SPACE_EXHAUSTED',
      `arith: no new ${split} problem of kind ${kind} at level ${level} after many draws; ask for fewer problems or more levels`,
    );
  }
}

export type ArithSetOptions = {
  count: number;
  /** Levels to draw from (default 1..4). */
  levels?: readonly number[];
  /**
   * Problems per level in each turn of the rotation, one positive whole number per level
   * (default 1 each): `levels [1, 5]` with `levelWeights [3, 1]` gives level 1 three problems
   * for each of level 5's.
   */
  levelWeights?: readonly number[];
  /** Kinds to draw from (default all). */
  kinds?: readonly ArithKind[];
};

/** The fixed seed of the evaluation split's default sequence and of the `arith` benchmark. */
export const ARITH_EVAL_SEED = 'arith-eval-v1';
const DEFAULT_BENCHMARK_SIZE = 200;
/** Draws per slot before a pair counts as exhausted; tiny spaces only, never the listed levels. */
const MAX_DRAWS_PER_SLOT = 5000;

/** Turns operands into a full problem (statement, reference answer, id). */
function toProblem(spec: ArithProblem['spec'], level: number): ArithProblem {
  return {
    id: arithProblemId(spec),
    family: 'arith',
    level,
    problem: arithStatement(spec),
    answer: arithAnswerValue(spec).toString(),
    spec,
  };
}

/** The levels of one turn of the rotation: each level as many times as its weight, in order. */
function levelRotation(levels: readonly number[], weights: readonly number[] | undefined): number[] {
  if (weights === undefined) return [...levels];
  if (weights.length !== levels.length)
    throw new RangeError(
      `arith: ${weights.length} level weights for ${levels.length} levels; give one weight per level`,
    );
  return levels.flatMap((level, index) => {
    const weight = weights[index]!;
    if (!Number.isInteger(weight) || weight < 1)
      throw new RangeError(
        `arith: the weight of level ${level} must be a positive whole number, got ${weight}`,
      );
    return Array.from({ length: weight }, () => level);
  });
}

function problemSet(split: ArithSplit, random: Random, options: ArithSetOptions): ArithProblem[] {
  const { count, kinds = ARITH_KINDS } = options;
  if (!Number.isInteger(count) || count < 0)
    throw new RangeError(`arith: count must be a whole number, got ${count}`);
  if ((options.levels ?? ARITH_LEVELS).length === 0 || kinds.length === 0)
    throw new RangeError('arith: levels and kinds must not be empty');
  const levels = levelRotation(options.levels ?? ARITH_LEVELS, options.levelWeights);
  const seen = new Set<string>();
  const problems: ArithProblem[] = [];
  for (let slot = 0; problems.length < count; slot++) {
    const kind = kinds[slot % kinds.length]!;
    const level = levels[Math.floor(slot / kinds.length) % levels.length]!;
    for (let draw = 0; ; draw++) {
      if (draw === MAX_DRAWS_PER_SLOT) throw new ArithSpaceExhaustedError(kind, level, split);
      const spec = generateArithSpec(kind, level, random);
      if (arithSplitOf(spec) !== split) continue;
      const problem = toProblem(spec, level);
      if (seen.has(problem.id)) continue;
      seen.add(problem.id);
      problems.push(problem);
      break;
    }
  }
  return problems;
}

/** Training problems: deterministic from `seed`, never on the evaluation side of the split. */
export function arithTrainProblems(options: ArithSetOptions & { seed: number | string }): ArithProblem[] {
  return problemSet('train', createSeededRandom(`train:${options.seed}`), options);
}

/** Held-out evaluation problems, disjoint from every training set (default seed fixed). */
export function arithEvalProblems(options: ArithSetOptions & { seed?: number | string }): ArithProblem[] {
  return problemSet('eval', createSeededRandom(`eval:${options.seed ?? ARITH_EVAL_SEED}`), options);
}

/** One benchmark item, in the shape of the evaluation harness's benchmark records. */
export type ArithBenchmarkItem = { id: string; problem: string; answer: string; level: number };

/** The built-in `arith` benchmark: the evaluation split, fixed seed, all kinds, levels 1..4. */
export function arithBenchmark(options: { count?: number } = {}): ArithBenchmarkItem[] {
  return arithEvalProblems({ count: options.count ?? DEFAULT_BENCHMARK_SIZE }).map(
    ({ id, problem, answer, level }) => ({ id, problem, answer, level }),
  );
}
