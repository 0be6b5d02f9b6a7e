/**
 * The public shape of the rollout system: what one rollout step takes (problems, the engine —
 * possibly a router over replicas —, sandbox, grader, clock, random, configuration, the state
 * carried from the previous step) and what it returns (kept and dropped groups with rewards
 * and advantages, the state for the next step, per-step statistics). `train rl` and the
 * simulator drive exactly this; it does not know whether its engines are real or simulated.
 */

import type { AgentConfig } from '../agent/agent-options.ts';
import type { PromptBuilder } from '../agent/prompt-builder.ts';
import type { SessionPark } from '../agent/session-park.ts';
import type { Tokenizer } from '../engine/tokenizer.ts';
import type { Engine } from '../engine/types.ts';
import type { GradeResult } from '../grader/types.ts';
import type { Dialect } from '../protocol/dialect.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import type { Clock } from '../shared/clock.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import type { RolloutConfig } from './rollout-config.ts';
import type { ReplicaStepStats, StepStats } from './step-record.ts';

/** A problem with its reference answer. */
export type RolloutProblem = { id: string; text: string; answer: string };

/** Fresh problems in a fixed order; `next()` returns null when none are left. */
export interface ProblemSource {
  next(): RolloutProblem | null;
}

/** One budget stage of the growing schedule (the paper: 48k/48/2 → 72k/72/3 → 96k/96/4). */
export type BudgetStage = { maxTokens: number; maxToolCalls: number; partialRollouts: number };

export type RolloutMode = 'async' | 'sync';

/** What happens to a trajectory whose oldest segment is more than `maxPolicyLag` versions old. */
export type StalePolicy = 'restart' | 'drop';

export type { GroupDropReason as DropReason } from './group-filter.ts';

import type { GroupDropReason as DropReason } from './group-filter.ts';

/**
 * A reward, or null when it could not be computed (the grader could not run): missing, never
 * wrong. A missing reward is left out of its group's statistics and counted.
 */
export type Reward = number | null;

/**
 * A group that is not decided yet and waits for the next step: its problem, the step it started
 * in, and its trajectories — finished ones, and unfinished ones (finish reason
 * `segment-budget` or `paused`, or null when they have not run at all) to be resumed first.
 */
export type ParkedGroup = {
  problem: RolloutProblem;
  startedStep: number;
  /** One per sample; null for a sample that has not started yet. */
  trajectories: (Trajectory | null)[];
};

/** What carries from one step to the next. Plain data: written to and read from records. */
export type RolloutState = {
  /** The index of the budget stage in force. */
  stage: number;
  parked: ParkedGroup[];
};

/** A decided group. */
export type GroupOutcome = {
  step: number;
  problem: RolloutProblem;
  trajectories: Trajectory[];
  rewards: Reward[];
  /** One per trajectory: graded correct, wrong, or null where the grade is missing. */
  correct: (boolean | null)[];
  /** The oldest policy version among every member's model segments (null when none is versioned). */
  oldestPolicyVersion: number | null;
  /** One per trajectory; null where the reward is missing or the group is dropped. */
  advantages: (number | null)[];
  kept: boolean;
  dropReason: DropReason | null;
  /**
   * With `dropReason` `abandoned`: the members stopped unfinished, as far as they got (their
   * sessions closed). `trajectories` holds the finished ones.
   */
  abandoned?: Trajectory[];
  /**
   * With resample-on-correct: how many members were sampled, and the ones left out of
   * `trajectories` with why (`correct-more-faults`: a right answer with more tool errors or
   * format faults than those kept; `uniform`: a wrong or ungraded one, drawn out uniformly).
   */
  resampled?: {
    sampled: number;
    discarded: {
      id: string;
      reason: 'correct-more-faults' | 'uniform';
      correct: boolean | null;
      toolErrors: number;
      formatFaults: number;
    }[];
  };
};

export type { ReplicaStepStats, StepStats };

/** Events for progress and records; the step emits them as they happen. */
export type RolloutEvent =
  | { type: 'trajectory-park'; step: number; trajectory: Trajectory }
  | { type: 'trajectory-finish'; step: number; trajectory: Trajectory; reward: Reward }
  | { type: 'group-decide'; group: GroupOutcome };

/** Per replica counters a router keeps (read before and after a step). */
export interface ReplicaStatsSource {
  replicaStats(): Record<string, ReplicaStepStats>;
}

/** The parts one step talks to. */
export type RolloutParts = {
  /** An engine, or a router over replicas (then its per-replica counters go into the step stats). */
  engine: Engine & Partial<ReplicaStatsSource>;
  /** Its name in `steps.jsonl` (`router`): the router's policy, or `single`. */
  routerName: string;
  tokenizer: Tokenizer | null;
  dialect: Dialect;
  sandbox: SandboxProvider;
  /** Keeps the sandbox sessions of parked trajectories between steps (owned by the caller). */
  park: SessionPark;
  /** Grades a finished trajectory; `correct: null` (or a throw) is a missing grade. */
  grade: (
    trajectory: Trajectory,
    problem: RolloutProblem,
  ) => Promise<Pick<GradeResult, 'correct'> | { correct: null }>;
  clock: Clock;
  /** Uniform in [0, 1); used for ids only when `createId` is absent. */
  random: () => number;
  prompt?: PromptBuilder;
  createId?: () => string;
  onEvent?: (event: RolloutEvent) => void;
  signal?: AbortSignal;
};

/** One step's inputs beside the parts. */
export type RolloutStepInput = {
  step: number;
  policyVersion: number;
  state: RolloutState;
  problems: ProblemSource;
  config: RolloutConfig;
  /** The agent loop's sampling, tool and retry settings; budgets come from the stage. */
  agent?: Partial<Pick<AgentConfig, 'sampling' | 'tool' | 'retry' | 'engineTimeoutMs'>>;
};

/** What one step returns. */
export type RolloutStepResult = {
  kept: GroupOutcome[];
  dropped: GroupOutcome[];
  /** The state for the next step (parked groups, stage). */
  state: RolloutState;
  stats: StepStats;
};
