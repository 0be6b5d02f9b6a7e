/**
 * `quickstart.json` of `quickstart --model`: every evaluated model's figures, each stage's
 * effect as a paired difference on the same problems, every stage's wall time, and the
 * settings (docs/records.md). Written once the report is.
 */
import { z } from 'zod';

const stageName = z.enum(['pull', 'data', 'eval-baseline', 'sft', 'eval-sft', 'rl', 'eval-rl']);
const modelName = z.enum(['baseline', 'sft', 'rl']);
const milliseconds = (description: string) => z.number().nonnegative().meta({ description, unit: 'ms' });

export const quickstartRecordSchema = z
  .object({
    label: z.string().meta({ description: 'the model name or folder name the run is labelled by' }),
    baseModel: z.string().meta({ description: 'the base model folder' }),
    outDir: z.string().meta({ description: 'the quickstart folder' }),
    evaluations: z
      .array(
        z
          .object({
            model: modelName.meta({ description: 'which model' }),
            modelDir: z.string().meta({ description: 'its folder' }),
            runDir: z.string().meta({ description: 'its evaluation run folder' }),
            problems: z
              .number()
              .int()
              .nonnegative()
              .meta({ description: 'held-out problems evaluated', unit: 'problems' }),
            accuracy: z
              .number()
              .min(0)
              .max(1)
              .meta({ description: 'avg@1 over them, greedy', unit: 'fraction 0–1' }),
            codeCallsPerTrajectory: z
              .number()
              .nonnegative()
              .meta({ description: 'mean code calls', unit: 'calls' }),
            meanResponseLength: z.number().nonnegative().meta({
              description: "mean response length, in the unit of the evaluation's summary.json length.unit",
              unit: 'tokens or chars',
            }),
          })
          .strict(),
      )
      .meta({ description: 'one per evaluated model, in order' }),
    effects: z
      .array(
        z
          .object({
            before: modelName.meta({ description: 'the model compared against' }),
            after: modelName.meta({ description: 'the model compared' }),
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
      .meta({ description: "each stage's effect: SFT against base, RL against SFT, both against base" }),
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
        trainMinutes: z.number().nonnegative().meta({ description: 'SFT time budget', unit: 'minutes' }),
        rlMinutes: z
          .number()
          .nonnegative()
          .meta({ description: 'RL time budget (0: no RL)', unit: 'minutes' }),
        maxTokens: z
          .number()
          .int()
          .positive()
          .meta({ description: 'prompt + response budget', unit: 'tokens' }),
        maxToolCalls: z
          .number()
          .int()
          .nonnegative()
          .meta({ description: 'code calls per trajectory', unit: 'calls' }),
        trainProblems: z
          .number()
          .int()
          .positive()
          .meta({ description: 'tool solutions written for SFT', unit: 'problems' }),
        levels: z
          .array(z.number().int().nonnegative())
          .meta({ description: 'arith levels of the data and RL problems' }),
      })
      .strict()
      .meta({ description: 'the settings of the call' }),
    finishedAt: z.iso.datetime().meta({ description: 'when it finished (ISO 8601, UTC)' }),
  })
  .strict();

/** What `quickstart.json` holds. */
export type QuickstartRecord = z.infer<typeof quickstartRecordSchema>;
