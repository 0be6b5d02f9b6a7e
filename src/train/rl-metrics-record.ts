/**
 * One line of `train rl`'s `metrics.jsonl`, one per step: the schema is the contract other
 * tools and the report read (docs/records.md); `rlMetrics` builds a line of this type.
 * Trajectory figures cover every finished trajectory of the step's decided groups, kept and
 * dropped; training figures are null when the step trained nothing.
 */
import { z } from 'zod';

const share = (description: string) =>
  z.number().min(0).max(1).nullable().meta({ description, unit: 'fraction 0–1' });
const logprobGap = (description: string) =>
  z
    .object({
      mean: z.number().nonnegative().meta({ description: 'mean over those tokens', unit: 'nats' }),
      max: z.number().nonnegative().meta({ description: 'largest over those tokens', unit: 'nats' }),
    })
    .strict()
    .nullable()
    .meta({ description });
const milliseconds = (description: string) => z.number().nonnegative().meta({ description, unit: 'ms' });

export const rlMetricsSchema = z
  .object({
    step: z.number().int().nonnegative().meta({ description: 'the rollout step, from 0', unit: 'steps' }),
    policyVersion: z.number().int().nonnegative().meta({
      description: "the trainer's policy version after the step's updates",
      unit: 'versions',
    }),
    rewardMean: z
      .number()
      .nullable()
      .meta({ description: 'mean reward of the graded trajectories (null: none graded)' }),
    accuracy: share('members graded correct over graded members (null: none graded)'),
    codeFrequency: share('trajectories with at least one code call'),
    codeCallsPerTrajectory: z.number().nonnegative().nullable().meta({
      description: 'mean code calls per trajectory',
      unit: 'calls',
    }),
    responseTokensMean: z.number().nonnegative().nullable().meta({
      description:
        'mean model tokens per trajectory (characters of model text where the engine gives no token ids)',
      unit: 'tokens',
    }),
    truncationRate: z.number().min(0).max(1).meta({
      description: 'finished trajectories cut by a length or tool-call budget, over all finished',
      unit: 'fraction 0–1',
    }),
    selfCorrectionRate: share('trajectories with a failed code call followed later by a successful one'),
    groupsKept: z.number().int().nonnegative().meta({ description: 'groups trained on', unit: 'groups' }),
    groupsDropped: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: 'groups decided and dropped', unit: 'groups' }),
    clipFraction: share('trained tokens whose ratio was clipped'),
    approxKl: z
      .number()
      .nullable()
      .meta({ description: 'approximate KL to the policy that sampled (old)', unit: 'nats' }),
    entropy: z
      .number()
      .nullable()
      .meta({ description: 'mean entropy of the trained tokens', unit: 'nats/token' }),
    gradNorm: z.number().nullable().meta({ description: 'global gradient norm before clipping' }),
    offPolicyWeight: z.number().nullable().meta({
      description: 'decoupled objective: mean π_prox / π_behaviour before the cap (null: not decoupled)',
    }),
    offPolicyCapped: share('decoupled objective: trained tokens whose weight was capped or masked'),
    rolloutLogprobGap: logprobGap(
      '|engine − trainer| logprob before the update of the trained tokens sampled by the weights the step trains from: the numeric mismatch of engine and trainer (null: no such token, or not reported)',
    ),
    staleLogprobGap: logprobGap(
      'the same over the trained tokens sampled by older weights (partial rollouts, off-policy steps): the numeric mismatch plus the policy’s change since (null: no such token, or not reported)',
    ),
    klRef: z.number().nullable().meta({
      description:
        'mean KL to the reference policy (the --model RL started from) on the trained tokens (null without --kl-coef)',
      unit: 'nats/token',
    }),
    updates: z.number().int().nonnegative().meta({
      description: 'optimizer updates applied: mini-batches × epochs, 0 when skipped or untrained',
      unit: 'updates',
    }),
    rolloutMs: milliseconds("wall time of the step's rollout"),
    trainMs: milliseconds("wall time of the step's training: the GRPO step and its checkpoint"),
    weightSyncMs: milliseconds(
      'export + pause + load + continue on every engine; 0 when engines share the weights',
    ),
    engineIdleMs: milliseconds("engines waiting for this step's rollout to be allowed to start"),
    trainerIdleMs: milliseconds("the trainer waiting for this step's batch"),
    stalenessMax: z.number().int().nullable().meta({
      description: 'most versions between the trainer and the policy that sampled a trained token',
      unit: 'versions',
    }),
    stalenessMean: z.number().nullable().meta({
      description: 'the same, mean over the trained model tokens',
      unit: 'versions',
    }),
    stalenessHistogram: z
      .record(
        z.string(),
        z
          .number()
          .int()
          .nonnegative()
          .meta({ description: 'trained model tokens that many versions behind', unit: 'tokens' }),
      )
      .meta({ description: 'trained model tokens by versions behind the trainer (key: versions)' }),
    stage: z.number().int().nonnegative().meta({ description: 'the budget stage in force (index)' }),
    tokensSampled: z.number().int().nonnegative().meta({
      description: "tokens the step's rollout sampled, every trajectory kept or not",
      unit: 'tokens',
    }),
    tokensPerKeptGroup: z.number().nonnegative().nullable().meta({
      description: 'tokensSampled per kept group (null: none kept)',
      unit: 'tokens',
    }),
    problemsSkipped: z.number().int().nonnegative().meta({
      description: 'problems skipped before generation by their history (--skip-history; 0 when off)',
      unit: 'problems',
    }),
  })
  .strict();

/** One line of `metrics.jsonl` of `train rl`. */
export type RlMetrics = z.infer<typeof rlMetricsSchema>;
