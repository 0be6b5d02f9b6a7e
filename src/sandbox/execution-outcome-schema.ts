/** zod schema of `ExecutionOutcome` as JSON, used by clients to check what a node sent. */
import { z } from 'zod';
import type { ExecutionOutcome } from './types.ts';

export const executionOutcomeSchema: z.ZodType<ExecutionOutcome> = z.discriminatedUnion('status', [
  z.object({ status: z.literal('ok'), stdout: z.string(), stderr: z.string(), ms: z.number() }),
  z.object({
    status: z.literal('error'),
    stdout: z.string(),
    stderr: z.string(),
    exception: z.string(),
    ms: z.number(),
    exitCode: z.number().int().min(1).max(255).exactOptional(),
  }),
  z.object({ status: z.literal('timeout'), stdout: z.string(), limitMs: z.number() }),
  z.object({ status: z.literal('memory-exceeded'), limitBytes: z.number() }),
  z.object({ status: z.literal('killed'), reason: z.string() }),
]);
