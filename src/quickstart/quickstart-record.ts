/**
 * `quickstart.json` of `quickstart` (every model): every evaluated model's figures, each
 * stage's effect as a paired difference on the same problems, every stage's wall time, and the
 * settings (docs/records.md). Written once the report is.
 */
import { z } from 'zod';

const stageName = z.enum([
  'model',
  'pull',
  'data',
  'eval-baseline',
  'sft',
  'sft-text',
  'eval-sft',
  'eval-sft-text',
  'rl',
  'eval-rl',
  'eval-sft@rl-split',
  'eval-rl@rl-split',
]);
const modelName = z.enum(['baseline', 'sft', 'sft-text', 'rl']);
const milliseconds = (description: string) => z.number().nonnegative().meta({ description, unit: 'ms' });

const evaluation = z
  .object({
    name: z.string().meta({
      description: 'the evaluation: the model on held-out arith, or MODEL@rl-split on the RL problems’ split',
    }),
    model: modelName.meta({ description: 'which model' }),
    modelDir: z.string().meta({ description: 'its folder' }),
    runDir: z.string().meta({ description: 'its evaluation run folder' }),
    problems: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: 'held-out problems evaluated', unit: 'problems' }),
    accuracy: z.number().min(0).max(1).meta({ description: 'avg@1 over them, greedy', unit: 'fraction 0–1' }),
    codeCallsPerTrajectory: z.number().nonnegative().meta({ description: 'mean code calls', unit: 'calls' }),
    meanResponseLength: z.number().nonnegative().meta({
      description: "mean response length, in the unit of the evaluation's summary.json length.unit",
      unit: 'tokens or chars',
    }),
    levels: z
      .array(
        z
          .object({
            level: z.number().int().nonnegative().meta({ description: 'arith level' }),
            problems: z
              .number()
              .int()
              .nonnegative()
              .meta({ description: 'problems of it', unit: 'problems' }),
            correct: z.number().int().nonnegative().meta({ description: 'right answers', unit: 'problems' }),
            accuracy: z
              .number()
              .min(0)
              .max(1)
              .meta({ description: 'correct / problems', unit: 'fraction 0–1' }),
          })
          .strict(),
      )
      .meta({ description: 'accuracy by level' }),
  })
  .strict();

export const quickstartRecordSchema = z
  .object({
    label: z.string().meta({ description: 'the model name or folder name the run is labelled by' }),
    baseModel: z.string().meta({
      description: 'the model folder SFT started from (a new byte model: the tool run’s init-model)',
    }),
    outDir: z.string().meta({ description: 'the quickstart folder' }),
    evaluations: z
      .array(evaluation)
      .meta({ description: 'one per evaluated model on held-out arith, in order' }),
    rlSplit: z.array(evaluation).meta({
      description:
        'the tool SFT model and the RL model on the RL problems’ held-out split (empty without RL)',
    }),
    effects: z
      .array(
        z
          .object({
            before: modelName.meta({ description: 'the model compared against' }),
            after: modelName.meta({ description: 'the model compared' }),
            on: z.enum(['held-out', 'rl-split']).meta({
              description: 'the problems compared on: held-out arith, or the RL problems’ held-out split',
            }),
            effect: z
              .object({
                problems: z
                  .number()
                  .int()
                  .nonnegative()
                  .meta({ description: 'problems graded for both', unit: 'problems' }),
                gained: z
                  .number()
                  .int()
                  .nonnegative()
                  .meta({ description: 'right after, wrong before', unit: 'problems' }),
                lost: z
                  .number()
                  .int()
                  .nonnegative()
                  .meta({ description: 'right before, wrong after', unit: 'problems' }),
                difference: z
                  .number()
                  .min(-1)
                  .max(1)
                  .meta({ description: 'accuracy after − before', unit: 'fraction' }),
                interval95: z.tuple([z.number(), z.number()]).meta({
                  description: '95% interval of the difference (paired, normal approximation)',
                  unit: 'fraction',
                }),
                pValue: z.number().min(0).max(1).meta({ description: 'two-sided exact McNemar p-value' }),
                gainMeasured: z.boolean().meta({ description: 'after is better at the 5% level' }),
              })
              .strict()
              .meta({ description: 'the paired difference' }),
            sentence: z.string().meta({ description: 'the sentence printed for it' }),
          })
          .strict(),
      )
      .meta({
        description:
          "each stage's effect: SFT against base, RL against SFT (on the RL problems' split and on held-out arith), both against base",
      }),
    stages: z
      .array(
        z
          .object({
            stage: stageName.meta({ description: 'the stage' }),
            status: z.enum(['ran', 'resumed', 'reused']).meta({ description: 'what this call did with it' }),
            wallMs: milliseconds('its time in this call (0 when reused)'),
            recordedWallMs: z.number().nonnegative().nullable().meta({
              description: 'its time in the session that finished it (null: unknown)',
              unit: 'ms',
            }),
          })
          .strict(),
      )
      .meta({ description: 'every stage, in order' }),
    reportPath: z.string().meta({ description: 'report.html' }),
    resultPath: z.string().meta({ description: 'this file' }),
    wallMs: milliseconds('the whole call'),
    settings: z
      .object({
        count: z
          .number()
          .int()
          .positive()
          .meta({ description: 'held-out problems per evaluation', unit: 'problems' }),
        concurrency: z
          .number()
          .int()
          .positive()
          .meta({ description: 'trajectories in flight', unit: 'trajectories' }),
        trainMinutes: z
          .number()
          .nonnegative()
          .nullable()
          .meta({ description: 'SFT time budget (null: its step count)', unit: 'minutes' }),
        rlMinutes: z
          .number()
          .nonnegative()
          .meta({ description: 'RL time budget (0: no RL)', unit: 'minutes' }),
        maxTokens: z
          .number()
          .int()
          .positive()
          .nullable()
          .meta({ description: "prompt + response budget (null: the model's context)", unit: 'tokens' }),
        maxToolCalls: z
          .number()
          .int()
          .nonnegative()
          .meta({ description: 'code calls per trajectory', unit: 'calls' }),
        trainProblems: z
          .number()
          .int()
          .positive()
          .meta({ description: 'solutions written for each SFT arm', unit: 'problems' }),
        levels: z.array(z.number().int().nonnegative()).meta({ description: 'arith levels of the SFT data' }),
        levelWeights: z.array(z.number().int().positive()).nullable().default(null).meta({
          description: 'problems per SFT level in each turn, one per level (null: one each)',
        }),
        rlLevels: z
          .array(z.number().int().nonnegative())
          .meta({ description: 'arith levels of the RL problems' }),
      })
      .strict()
      .meta({ description: 'the settings of the call' }),
    finishedAt: z.iso.datetime().meta({ description: 'when it finished (ISO 8601, UTC)' }),
  })
  .strict();

/** What `quickstart.json` holds. */
export type QuickstartRecord = z.infer<typeof quickstartRecordSchema>;
