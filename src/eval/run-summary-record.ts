/**
 * `summary.json` of an evaluation run folder (`eval`, the held-out evaluations of `train rl`,
 * the quickstarts' evaluations): avg@k, pass@k and maj@k per problem and overall, tool use,
 * response lengths and finish reasons (docs/records.md). `summarizeRun` builds it. Overall
 * figures are means over problems; a trajectory without a verdict is in no figure.
 */
import { z } from 'zod';

const count = (description: string, unit: string) =>
  z.number().int().nonnegative().meta({ description, unit });
const share = (description: string) => z.number().min(0).max(1).meta({ description, unit: 'fraction 0–1' });
const byK = (description: string) =>
  z.record(z.string(), share('the figure at that k')).meta({ description: `${description} (key: k)` });

export const toolUseStatsSchema = z
  .object({
    trajectories: count('trajectories counted', 'trajectories'),
    codeCalls: count('code calls made', 'calls'),
    codeCallsPerTrajectory: z
      .number()
      .nonnegative()
      .meta({ description: 'mean code calls per trajectory', unit: 'calls' }),
    codeUsageRate: share('trajectories with at least one code call'),
    codeErrorRate: share('failed calls over all calls (0 without calls)'),
    trajectoriesWithError: count('trajectories with a failed call', 'trajectories'),
    selfCorrected: count('of them, with a successful call after the first failure', 'trajectories'),
    selfCorrectionRate: z.number().min(0).max(1).nullable().meta({
      description: 'selfCorrected / trajectoriesWithError (null: no failed call)',
      unit: 'fraction 0–1',
    }),
  })
  .strict();

export const lengthStatsSchema = z
  .object({
    unit: z
      .enum(['tokens', 'chars'])
      .meta({ description: 'tokens where every trajectory has token ids, else characters' }),
    mean: z.number().nonnegative().meta({ description: 'mean response length', unit: 'the unit field' }),
    p50: z.number().nonnegative().meta({ description: 'median response length', unit: 'the unit field' }),
    p90: z.number().nonnegative().meta({ description: '90th percentile', unit: 'the unit field' }),
    max: z.number().nonnegative().meta({ description: 'longest', unit: 'the unit field' }),
  })
  .strict();

export const majorityVoteSchema = z
  .object({
    answer: z
      .string()
      .nullable()
      .meta({ description: "the winning group's answer (null: no sample answered)" }),
    votes: count('votes for it', 'samples'),
    correct: z.boolean().meta({ description: 'the winning answer is correct (false when null)' }),
    groups: count('distinct answer groups', 'groups'),
  })
  .strict();

export const problemSummarySchema = z
  .object({
    id: z.string().meta({ description: 'the problem' }),
    reference: z.string().meta({ description: 'its reference answer' }),
    samples: count('graded samples (with a verdict)', 'trajectories'),
    correct: count('of them correct', 'trajectories'),
    gradeUnavailable: count('samples without a verdict, in no figure', 'trajectories'),
    avg: share('avg@k of the problem'),
    passAtK: byK('pass@k of the problem, for each reported k not above its samples'),
    majority: majorityVoteSchema.meta({ description: 'the majority vote over its samples' }),
    codeCallsPerTrajectory: z
      .number()
      .nonnegative()
      .meta({ description: 'mean code calls of its samples', unit: 'calls' }),
  })
  .strict();

export const runSummarySchema = z
  .object({
    benchmark: z.string().meta({ description: 'the benchmark name' }),
    k: z.number().int().positive().meta({ description: 'samples per problem asked', unit: 'samples' }),
    problems: count('problems in the run', 'problems'),
    trajectories: count('graded trajectories with a verdict', 'trajectories'),
    expectedTrajectories: count('problems × k', 'trajectories'),
    complete: z.boolean().meta({ description: 'every (problem, sample) has a verdict' }),
    gradeUnavailable: count('trajectories without a verdict (grader outage), in no figure', 'trajectories'),
    avgAtK: share('mean over problems of avg@k'),
    passAtK: byK('mean over problems of pass@k'),
    majAtK: share('share of problems whose majority answer is correct'),
    toolUse: toolUseStatsSchema.meta({ description: 'code-call statistics of the trajectories' }),
    length: lengthStatsSchema.meta({ description: 'response lengths' }),
    finishReasons: z
      .record(z.string(), count('trajectories that ended so', 'trajectories'))
      .meta({ description: 'trajectories by finish reason (key: the reason)' }),
    perProblem: z.array(problemSummarySchema).meta({ description: 'one entry per problem' }),
  })
  .strict();

export type ProblemSummary = z.infer<typeof problemSummarySchema>;
/** What `summary.json` holds. */
export type RunSummary = z.infer<typeof runSummarySchema>;
