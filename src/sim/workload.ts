/**
 * A simulation workload as data: how many prompts a step takes and how many samples each,
 * the distributions of prompt, response and tool-output lengths, tool calls and tool latency,
 * and the cluster (replicas and their cost model, KV capacity, batch limit, sandbox workers).
 * Files are JSON validated by a strict zod schema; an error names the file and the field.
 * Built-in workloads live in `workloads/NAME.json` beside this file.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { distributionSchema } from './distribution.ts';
import { costModelSchema } from './engine-cost-model.ts';
import { WorkloadInvalidError } from './sim-errors.ts';

const positive = z.number().int().positive();

export const workloadSchema = z
  .object({
    name: z.string().min(1).default('workload'),
    description: z.string().default(''),
    /** Prompts (GRPO groups) per step. */
    stepPrompts: positive,
    /** Samples per prompt (GRPO group size). */
    groupSize: positive,
    promptTokens: distributionSchema,
    /** Model tokens of a whole response (code included, tool output not). */
    responseTokens: distributionSchema,
    /** Tool calls per trajectory: Poisson with mean `mean · R / E[R]` (longer responses call more), at most `max`. */
    toolCalls: z.object({ mean: z.number().nonnegative(), max: z.number().int().nonnegative() }).strict(),
    /** Characters (= tokens) a call prints; the agent loop cuts output longer than its limit (2,000 by default). */
    toolOutputTokens: distributionSchema,
    toolLatencyMs: distributionSchema,
    /** Chance that a trajectory's final answer is right (groups that all agree are what adaptive batches drop). */
    solveRate: z.number().min(0).max(1).default(0.5),
    replicas: positive,
    costModel: costModelSchema,
    kvCapacityTokens: positive,
    maxRunningRequests: positive,
    /** Prefix-cache block size in tokens. */
    blockTokens: positive.default(16),
    sandboxWorkers: positive,
    /** The rollout's budgets: response tokens and tool calls per trajectory, and partial rollouts N (L_seg = maxTokens / N). */
    budgets: z
      .object({
        maxTokens: positive,
        maxToolCalls: z.number().int().nonnegative(),
        partialRollouts: positive,
      })
      .strict(),
    seed: z.number().int().default(0),
  })
  .strict();

export type Workload = z.infer<typeof workloadSchema>;
export type WorkloadInput = z.input<typeof workloadSchema>;

/** Names of the built-in workloads (files under `workloads/`). */
export const BUILTIN_WORKLOADS = ['paper', 'heavy-tail', 'tool-heavy'] as const;

/** Validates a workload object; `where` names its source in errors. */
export function parseWorkload(input: unknown, where: string): Workload {
  const parsed = workloadSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.join('.') || '(top level)';
  throw new WorkloadInvalidError(`workload ${where}: field "${field}": ${issue?.message ?? 'invalid'}`, {
    cause: parsed.error,
  });
}

/** A built-in workload by name, or a JSON file by path. */
export function loadWorkload(nameOrPath: string): Workload {
  const builtin = (BUILTIN_WORKLOADS as readonly string[]).includes(nameOrPath);
  const path = builtin ? join(import.meta.dirname, 'workloads', `${nameOrPath}.json`) : nameOrPath;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new WorkloadInvalidError(
      `workload ${nameOrPath}: not a built-in workload (${BUILTIN_WORKLOADS.join(', ')}) and not a readable file`,
      { cause: error },
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new WorkloadInvalidError(`workload ${path}: not valid JSON (${(error as Error).message})`, {
      cause: error,
    });
  }
  return parseWorkload(json, path);
}
