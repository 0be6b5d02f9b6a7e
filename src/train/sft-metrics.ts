/**
 * One line of `train sft`'s `metrics.jsonl` (every model), one per optimizer step: the schema is the
 * contract other tools read (docs/records.md); the writer's type comes from it. Counts are of
 * the step's batch; times are of the step as the run saw it unless they say otherwise. A figure
 * that is not finite is written as null (JSON has no NaN).
 */
import { z } from 'zod';

const TOKENS_TRAINED =
  'tokens the loss is taken over in the step: loss mask 1 with a previous token (prompt and interpreter output excluded)';

export const sftMetricsSchema = z
  .object({
    step: z.number().int().positive().meta({ description: 'the step just taken, from 1', unit: 'steps' }),
    loss: z.number().nullable().meta({
      description: 'mean cross-entropy over the trained tokens (null: not finite)',
      unit: 'nats/token',
    }),
    tokens: z
      .number()
      .int()
      .nonnegative()
      .meta({
        description: `${TOKENS_TRAINED}; the same count as tokensTrained, under its first documented name`,
        unit: 'tokens',
        deprecated: true,
        deprecatedSince: '0.1.0',
        replacedBy: 'tokensTrained',
      }),
    tokensTrained: z.number().int().nonnegative().meta({ description: TOKENS_TRAINED, unit: 'tokens' }),
    tokensTotal: z.number().int().nonnegative().meta({
      description: 'every token of the step batch: prompt, model text and interpreter output',
      unit: 'tokens',
    }),
    learningRate: z.number().nonnegative().meta({ description: 'the learning rate the step used' }),
    gradNorm: z.number().nullable().meta({
      description: 'global gradient norm before clipping (null: not finite, the update was skipped)',
    }),
    stepMs: z.number().nonnegative().meta({
      description: 'wall time of the step seen by the run: batch transfer, forward, backward, optimizer',
      unit: 'ms',
    }),
    computeMs: z
      .number()
      .nonnegative()
      .meta({ description: "the trainer's own time for the step", unit: 'ms' }),
    tokensPerSecond: z.number().nonnegative().meta({
      description: 'trained tokens per second of the step: tokens / stepMs, stepMs before it is rounded',
      unit: 'tokens/s',
    }),
    tokensTotalPerSecond: z.number().nonnegative().meta({
      description:
        'every token of the batch per second of the step: tokensTotal / stepMs, stepMs before it is rounded',
      unit: 'tokens/s',
    }),
    skipped: z.boolean().meta({ description: 'the update was skipped: the gradient was not finite' }),
  })
  .strict();

/** One line of `metrics.jsonl` of `train sft`. */
export type SftMetrics = z.infer<typeof sftMetricsSchema>;
