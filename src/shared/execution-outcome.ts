/**
 * `ExecutionOutcome`, the result of running one code cell: the one source of the contract.
 * The sandbox produces it, the trajectory records it, the protocol renders it, and clients
 * check what a node sent with the same schema. Expected failures are values, never exceptions.
 * It lives in `shared` because the modules that use it (protocol, trajectory, sandbox) may not
 * depend on each other.
 */
import { z } from 'zod';

export const executionOutcomeSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('ok'), stdout: z.string(), stderr: z.string(), ms: z.number() }).strict(),
  /**
   * An exception, or `sys.exit(n)` with a non-zero status: `exitCode` is then the status the
   * process would exit with (absent for an exception, which a process reports as 1).
   */
  z
    .object({
      status: z.literal('error'),
      stdout: z.string(),
      stderr: z.string(),
      exception: z.string(),
      ms: z.number(),
      exitCode: z.number().int().min(1).max(255).exactOptional(),
    })
    .strict(),
  z.object({ status: z.literal('timeout'), stdout: z.string(), limitMs: z.number() }).strict(),
  z.object({ status: z.literal('memory-exceeded'), limitBytes: z.number() }).strict(),
  /** The session was reset (hard kill, crash, lost node); its Python state is gone. */
  z.object({ status: z.literal('killed'), reason: z.string() }).strict(),
]);

export type ExecutionOutcome = z.infer<typeof executionOutcomeSchema>;
