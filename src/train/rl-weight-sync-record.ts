/**
 * One line of `train rl`'s `syncs.jsonl`, one per weight sync (the first brings the engines to
 * the committed weights at the start, then one after each step that changed them): its times,
 * and the weight version each engine reported after loading (docs/records.md).
 */
import { z } from 'zod';

export const rlWeightSyncSchema = z
  .object({
    policyVersion: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: 'the policy version sent', unit: 'versions' }),
    exportMs: z.number().nonnegative().meta({
      description: 'writing the weights for the engines (0 over a process group: nothing is written)',
      unit: 'ms',
    }),
    pausedMs: z
      .number()
      .nonnegative()
      .meta({ description: 'engines paused: flush, load, continue', unit: 'ms' }),
    totalMs: z.number().nonnegative().meta({ description: 'the whole sync', unit: 'ms' }),
    engines: z
      .array(
        z
          .object({
            name: z.string().meta({ description: 'the engine (its URL, or the replica name)' }),
            weightVersion: z.string().nullable().meta({
              description: 'the version it reported after loading (null: unreachable, skipped)',
            }),
          })
          .strict(),
      )
      .optional()
      .meta({ description: 'per engine, after a sync from disk (absent over a process group)' }),
    bytes: z.number().int().nonnegative().optional().meta({
      description: 'bytes broadcast over the process group (--weight-sync distributed only)',
      unit: 'bytes',
    }),
  })
  .strict();

/** One weight sync, as `syncs.jsonl` records it. */
export type RlWeightSync = z.infer<typeof rlWeightSyncSchema>;
