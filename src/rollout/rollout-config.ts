/**
 * The validated configuration of the rollout system. Defaults are the paper's where it gives
 * them (budget stages, 10% truncation threshold); the rest are documented in docs/rollout.md.
 */
import { z } from 'zod';
import { compositeRewardConfigSchema } from '../grader/rewards.ts';

const positive = z.number().int().positive();
const count = z.number().int().nonnegative();

export const budgetStageSchema = z
  .object({ maxTokens: positive, maxToolCalls: count, partialRollouts: positive })
  .strict();

/** The paper's growing budgets: 48k/48/2 → 72k/72/3 → 96k/96/4. */
export const PAPER_BUDGET_STAGES = [
  { maxTokens: 48_000, maxToolCalls: 48, partialRollouts: 2 },
  { maxTokens: 72_000, maxToolCalls: 72, partialRollouts: 3 },
  { maxTokens: 96_000, maxToolCalls: 96, partialRollouts: 4 },
] as const;

export const rolloutConfigSchema = z
  .object({
    /** n: trajectories per problem (one GRPO group). */
    groupSize: positive.default(8),
    /** B: groups kept per step. */
    batchSize: positive.default(64),
    /** `async`: request-level scheduling; `sync`: static synchronous turns (the baseline). */
    mode: z.enum(['async', 'sync']).default('async'),
    /** Growing budget stages; the next applies when a step's truncation rate exceeds the threshold. */
    stages: z
      .array(budgetStageSchema)
      .min(1)
      .default(() => PAPER_BUDGET_STAGES.map((stage) => ({ ...stage }))),
    truncationThreshold: z.number().min(0).max(1).default(0.1),
    /** Partial rollout on or off; off runs every trajectory to its end within the step. */
    partialRollout: z.boolean().default(true),
    /** L_seg; absent = maxTokens / partialRollouts of the stage. */
    segmentTokens: positive.optional(),
    /** T_seg; absent = maxToolCalls / partialRollouts of the stage (at least 1). */
    segmentToolCalls: positive.optional(),
    /** The longest one engine call may be (tokens). */
    maxNewTokensPerTurn: positive.default(4096),
    /** A trajectory whose oldest segment is more than this many versions old is stale. */
    maxPolicyLag: count.default(1),
    /**
     * A segment whose engine gave no numeric version: `fresh` (engines that never version their
     * weights), or `stale` (RL, where weights change: its weights are unknown).
     */
    unversioned: z.enum(['fresh', 'stale']).default('fresh'),
    stalePolicy: z.enum(['restart', 'drop']).default('restart'),
    /** Extra groups started beyond B so drops do not cost whole rounds (async only). */
    overProvision: count.default(2),
    /**
     * Async with partial rollout: keep starting fresh groups while fewer than B + overProvision
     * run, until B groups are decided, instead of stopping once that many are undecided (parked
     * groups included), with at most N × (B + overProvision) groups undecided (N: the stage's
     * partial rollouts). A step then decides up to a full batch.
     */
    fillBatch: z.boolean().default(false),
    /** Trajectories running at once (each holds a sandbox session). */
    maxActiveTrajectories: positive.default(512),
    /**
     * Async: KV-capacity-aware admission (null = off). A trajectory's segment starts only while
     * the KV tokens active trajectories hold stay within this many (the replicas' total KV
     * capacity); each counts for its context so far plus the mean tokens of one engine call
     * this step, updated after each of its calls.
     */
    kvBudgetTokens: positive.nullable().default(null),
    /**
     * Async with `kvBudgetTokens`: the tail cut (null = off). Once the KV held by running
     * trajectories falls below this fraction of its peak in the step while nothing waits to
     * start, the running trajectories pause and carry over, and the step ends.
     */
    tailCut: z.number().gt(0).lt(1).nullable().default(null),
    /**
     * Async with `kvBudgetTokens`: sibling-informed admission order (Seer-like; off = arrival
     * order). Segments waiting for the budget start by their group's state: members of groups
     * already known to be kept (finished members disagree) first, then groups with fewer than
     * two finished members, then groups whose two or more finished members all agree (likely
     * dropped); within a class the longest expected first (the longer of the trajectory's own
     * context and its longest finished sibling's).
     */
    siblingPriority: z.boolean().default(false),
    /**
     * Async: early abandonment (APRIL-like; null = off). Once this many finished members of a
     * group agree (all graded correct or all wrong) while others are unfinished, those others
     * are abandoned (a running segment is cut, the session closed) and the group is dropped as
     * `abandoned`. Biased: a group whose last members would have disagreed (a rare success or
     * failure) is lost (docs/rollout.md).
     */
    abandonAgreeing: z.number().int().min(1).nullable().default(null),
    /**
     * With `abandonAgreeing`: which agreement abandons a group: `either` (all right or all
     * wrong) or `wrong` (all wrong only; the members still running are the longest, and where
     * wrong answers run longer they are the likeliest to be wrong too, so fewer kept groups
     * are lost).
     */
    abandonVerdict: z.enum(['either', 'wrong']).default('either'),
    /** Grading attempts before a reward is recorded as missing. */
    gradeAttempts: positive.default(2),
    /**
     * The reward: `composite` (R_acc plus the code-call bonus of `reward`, the paper's) or
     * `accuracy` (R_acc only, outcome reward as ZeroTIR).
     */
    rewardKind: z.enum(['composite', 'accuracy']).default('composite'),
    reward: compositeRewardConfigSchema.default(() => compositeRewardConfigSchema.parse({})),
    /** Group advantage: (r − mean)/std (GRPO) or r − mean (Dr. GRPO, no std division). */
    advantageScale: z.enum(['std', 'mean-only']).default('std'),
    /**
     * Resample-on-correct (rStar2-Agent's GRPO-RoC): K ≥ 1; each group samples round(K · n)
     * members and is cut back to n when decided (`resample-on-correct.ts`). 1: off.
     */
    resampleOnCorrect: z.number().min(1).max(8).default(1),
  })
  .strict()
  .refine((config) => config.tailCut === null || config.kvBudgetTokens !== null, {
    message: 'tailCut needs kvBudgetTokens (the cut watches the KV the budget holds)',
    path: ['tailCut'],
  })
  .refine((config) => !config.siblingPriority || config.kvBudgetTokens !== null, {
    message: "siblingPriority needs kvBudgetTokens (it orders the budget's queue)",
    path: ['siblingPriority'],
  })
  .refine((config) => !config.siblingPriority || config.mode === 'async', {
    message: 'siblingPriority applies to mode async',
    path: ['siblingPriority'],
  })
  .refine((config) => config.abandonAgreeing === null || config.mode === 'async', {
    message: 'abandonAgreeing applies to mode async',
    path: ['abandonAgreeing'],
  })
  .refine((config) => config.abandonAgreeing === null || config.abandonAgreeing < config.groupSize, {
    message: 'abandonAgreeing must be below groupSize (at groupSize every member has finished)',
    path: ['abandonAgreeing'],
  });

export type RolloutConfig = z.infer<typeof rolloutConfigSchema>;
export type RolloutConfigInput = z.input<typeof rolloutConfigSchema>;
