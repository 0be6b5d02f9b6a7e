/**
 * One line of `steps.jsonl` (`rollout` and `train rl`), one per rollout step: its wall time,
 * what happened to trajectories and groups, tokens, tool calls and the load of each engine
 * replica (docs/records.md). The rollout step returns it as its statistics.
 */
import { z } from 'zod';

const count = (description: string, unit: string) =>
  z.number().int().nonnegative().meta({ description, unit });

/** Per replica counters of one step. */
export const replicaStepStatsSchema = z
  .object({
    requests: count('engine calls sent to the replica in the step', 'requests'),
    promptTokens: count('prompt tokens of those calls', 'tokens'),
    cachedTokens: z.number().int().nonnegative().optional().meta({
      description: 'of them, tokens the replica reported served from its prefix cache (absent: not reported)',
      unit: 'tokens',
    }),
  })
  .strict();

export const stepStatsSchema = z
  .object({
    step: count('the step, from 0', 'steps'),
    wallMs: z.number().nonnegative().meta({ description: 'wall time of the rollout step', unit: 'ms' }),
    mode: z
      .enum(['async', 'sync'])
      .meta({ description: 'request-level scheduling, or static synchronous turns' }),
    router: z.string().meta({ description: "the router's policy, or single (one engine)" }),
    trajectoriesFinished: count('trajectories that finished in the step', 'trajectories'),
    trajectoriesParked: count(
      'trajectories parked for the next step (segment budget or pause)',
      'trajectories',
    ),
    trajectoriesResumed: count('parked trajectories continued in the step', 'trajectories'),
    groupsKept: count('groups decided and kept', 'groups'),
    groupsDropped: count('groups decided and dropped', 'groups'),
    groupsBackfilled: count('groups started from fresh problems after a drop (back-fill)', 'groups'),
    groupsCarried: count('groups carried into the next step, undecided', 'groups'),
    tailCut: z
      .boolean()
      .meta({ description: 'the tail cut ended the step: running trajectories paused and carried' }),
    groupsAbandoned: count('groups dropped by early abandonment', 'groups'),
    trajectoriesAbandoned: count('their members stopped unfinished', 'trajectories'),
    trajectoriesStale: count('trajectories restarted or dropped by the staleness bound', 'trajectories'),
    rewardsMissing: count('finished trajectories whose reward could not be computed', 'trajectories'),
    truncationRate: z.number().min(0).max(1).meta({
      description: 'finished trajectories cut by a length or tool-call budget, over all finished',
      unit: 'fraction 0–1',
    }),
    tokensGenerated: count('model tokens the engines generated in the step', 'tokens'),
    toolCalls: count('code calls run in the step', 'calls'),
    stage: count('the budget stage in force (index)', 'stage'),
    replicas: z
      .record(z.string(), replicaStepStatsSchema.meta({ description: "one replica's counters" }))
      .meta({ description: 'per engine replica (key: its name)' }),
    problemsSkipped: z.number().int().nonnegative().optional().meta({
      description: 'problems skipped before generation by their history (absent without --skip-history)',
      unit: 'problems',
    }),
  })
  .strict();

/** Per replica counters of one step (as `steps.jsonl` writes them). */
export type ReplicaStepStats = z.infer<typeof replicaStepStatsSchema>;
/** One line of `steps.jsonl`. */
export type StepStats = z.infer<typeof stepStatsSchema>;
