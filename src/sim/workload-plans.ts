/**
 * Draws a workload's problems and trajectory plans, deterministically: every draw comes from
 * a generator seeded by the workload seed and what is drawn (problem, sample), so a plan does
 * not depend on the order in which trajectories happen to start.
 */
import { createSeededRandom, type Random } from '../tasks/seeded-random.ts';
import { inverseNormal, mean, sample, sampleBeta } from './distribution.ts';
import { problemHeader } from './simulated-policy.ts';
import type { TrajectoryPlan } from './trajectory-plan.ts';
import type { Workload } from './workload.ts';

/** The answer every simulated problem has; a plan answers it or `0`. */
export const SIMULATED_ANSWER = '1';

/** Template tokens around a problem-only prompt (`<|user|>\n…\n<|assistant|>\n`). */
const TEMPLATE_TOKENS = 22;

export type WorkloadPlans = {
  /** The text of problem `index`, padded to its drawn prompt length. */
  problemText(index: number): string;
  planFor(problem: number, sample: number): TrajectoryPlan;
  /** The mean response length, E[R]. */
  meanResponseTokens: number;
};

/** What a problem's difficulty fixes for all its samples. */
type ProblemDifficulty = { solveRate: number; lengthScale: number };

export function workloadPlans(workload: Workload): WorkloadPlans {
  const meanResponseTokens = mean(workload.responseTokens);
  const { difficulty } = workload;
  // Right answers have length factor 1, wrong ones `wrongLengthFactor`; dividing by the mean
  // factor keeps E[R] (the problem's scale has mean 1 and is drawn apart from its solve rate).
  const meanSolveRate =
    difficulty === undefined
      ? workload.solveRate
      : difficulty.solveRate.alpha / (difficulty.solveRate.alpha + difficulty.solveRate.beta);
  const lengthNormaliser =
    difficulty === undefined ? 1 : meanSolveRate + (1 - meanSolveRate) * difficulty.wrongLengthFactor;
  const problemDifficulty = (problem: number): ProblemDifficulty => {
    if (difficulty === undefined) return { solveRate: workload.solveRate, lengthScale: 1 };
    const random = createSeededRandom(`${workload.seed}:difficulty:${problem}`);
    const sigma = difficulty.lengthSigma;
    const normal = inverseNormal(Math.min(1 - 1e-12, Math.max(1e-12, random())));
    return {
      solveRate: sampleBeta(difficulty.solveRate.alpha, difficulty.solveRate.beta, random),
      lengthScale: Math.exp(sigma * normal - (sigma * sigma) / 2),
    };
  };
  const { problemSet } = workload;
  // With a finite problem set, draw `index` is problem index mod size in epoch ⌊index / size⌋.
  const baseOf = (index: number) => (problemSet === undefined ? index : index % problemSet.size);
  const epochOf = (index: number) => (problemSet === undefined ? 0 : Math.floor(index / problemSet.size));
  const problemText = (index: number): string => {
    const random = createSeededRandom(`${workload.seed}:prompt:${baseOf(index)}`);
    const tokens = Math.max(0, Math.round(sample(workload.promptTokens, random)) - TEMPLATE_TOKENS);
    const header = `${problemHeader(index)} `;
    return header + 'q'.repeat(Math.max(0, tokens - header.length));
  };
  const planFor = (problem: number, index: number): TrajectoryPlan => {
    const random = createSeededRandom(`${workload.seed}:plan:${problem}:${index}`);
    const difficultyNow = problemDifficulty(baseOf(problem));
    const { lengthScale } = difficultyNow;
    const solveRate = raisedSolveRate(
      difficultyNow.solveRate,
      (problemSet?.solveRateGainPerEpoch ?? 0) * epochOf(problem),
    );
    // The answer has its own stream, so lengths and tool calls are drawn as without difficulty.
    const correct = createSeededRandom(`${workload.seed}:answer:${problem}:${index}`)() < solveRate;
    const lengthFactor =
      difficulty === undefined
        ? 1
        : (lengthScale * (correct ? 1 : difficulty.wrongLengthFactor)) / lengthNormaliser;
    const maxResponse = 'max' in workload.responseTokens ? workload.responseTokens.max : undefined;
    const responseTokens = Math.max(
      1,
      Math.round(
        Math.min(
          maxResponse ?? Number.POSITIVE_INFINITY,
          sample(workload.responseTokens, random) * lengthFactor,
        ),
      ),
    );
    const rate = meanResponseTokens > 0 ? (workload.toolCalls.mean * responseTokens) / meanResponseTokens : 0;
    const count = Math.min(workload.toolCalls.max, poisson(rate, random));
    const positions = Array.from({ length: count }, () => random() * 0.95).sort((a, b) => a - b);
    const toolCalls = positions.map((at) => ({
      at,
      outputTokens: Math.max(1, Math.round(sample(workload.toolOutputTokens, random))),
    }));
    return { responseTokens, toolCalls, answer: correct ? SIMULATED_ANSWER : '0' };
  };
  return { problemText, planFor, meanResponseTokens };
}

/** s raised by `logitGain` in logit space (0 and 1 stay where they are). */
export function raisedSolveRate(solveRate: number, logitGain: number): number {
  if (logitGain === 0 || solveRate <= 0 || solveRate >= 1) return solveRate;
  const logit = Math.log(solveRate / (1 - solveRate)) + logitGain;
  return 1 / (1 + Math.exp(-logit));
}

/** A Poisson draw by inversion (λ up to a few hundred). */
function poisson(lambda: number, random: Random): number {
  if (lambda <= 0) return 0;
  const u = random();
  let k = 0;
  let probability = Math.exp(-lambda);
  let cumulative = probability;
  while (u > cumulative && k < 10_000) {
    k++;
    probability *= lambda / k;
    cumulative += probability;
  }
  return k;
}
