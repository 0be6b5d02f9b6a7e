/**
 * A simulation workload as data: how many prompts a step takes and how many samples each,
 * the distributions of prompt, response and tool-output lengths, tool calls and tool latency,
 * problem difficulty, the trainer, and the cluster (replicas and their cost model, KV
 * capacity, batch limit, sandbox workers). Files are JSON (a UTF-8 BOM is accepted, `-` reads
 * standard input) validated by a strict zod schema; an error names the file and the field.
 * Sizes are capped, and a workload whose longest trajectory cannot fit one replica's KV is
 * refused: either would otherwise run out of memory or never finish.
 * Built-in workloads live in `workloads/NAME.json` beside this file.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { stripBom } from '../shared/text-input.ts';
import { distributionSchema, quantile } from './distribution.ts';
import { costModelSchema } from './engine-cost-model.ts';
import { WorkloadInvalidError } from './sim-errors.ts';

const positive = z.number().int().positive();
const upTo = (max: number) => positive.max(max);

/** Trajectories one step may hold (prompts × samples): beyond it a simulation would not end in hours. */
export const MAX_STEP_TRAJECTORIES = 100_000;

/** Characters of tool output the agent loop keeps per call (its default limit). */
const TOOL_OUTPUT_LIMIT = 2000;

/** Tokens the rendering of one tool call adds around its output (code block, output tags). */
const TOOL_CALL_OVERHEAD_TOKENS = 100;

export const workloadSchema = z
  .object({
    name: z.string().min(1).default('workload'),
    description: z.string().default(''),
    /** Prompts (GRPO groups) per step. */
    stepPrompts: upTo(MAX_STEP_TRAJECTORIES),
    /** Samples per prompt (GRPO group size). */
    groupSize: upTo(1024),
    promptTokens: distributionSchema,
    /** Model tokens of a whole response (code included, tool output not). */
    responseTokens: distributionSchema,
    /** Tool calls per trajectory: Poisson with mean `mean · R / E[R]` (longer responses call more), at most `max`. */
    toolCalls: z
      .object({ mean: z.number().nonnegative().max(10_000), max: z.number().int().nonnegative().max(10_000) })
      .strict(),
    /** Characters (= tokens) a call prints; the agent loop cuts output longer than its limit (2,000 by default). */
    toolOutputTokens: distributionSchema,
    toolLatencyMs: distributionSchema,
    /** Chance that a trajectory's final answer is right (groups that all agree are what adaptive batches drop). */
    solveRate: z.number().min(0).max(1).default(0.5),
    /**
     * Problems of different difficulty (absent: every trajectory solves with `solveRate` and
     * lengths do not depend on the problem). Each problem draws a solve rate from
     * Beta(alpha, beta) (replacing `solveRate`) and a length scale, lognormal with mean 1 and
     * this `lengthSigma`; a wrong answer is `wrongLengthFactor` times as long as a right one.
     * Lengths are normalised so that the mean response stays `responseTokens`' mean.
     */
    difficulty: z
      .object({
        solveRate: z.object({ alpha: z.number().positive(), beta: z.number().positive() }).strict(),
        lengthSigma: z.number().nonnegative().max(3),
        wrongLengthFactor: z.number().positive().max(100),
      })
      .strict()
      .optional(),
    /**
     * Epochs over a finite problem set (absent: every problem drawn is new). Draw i of the
     * stream is problem i mod `size` in epoch ⌊i / size⌋; a problem keeps its difficulty and
     * prompt, and its solve rate s rises each epoch as RL raises it:
     * logit s_e = logit s_0 + `solveRateGainPerEpoch` · e.
     */
    problemSet: z
      .object({
        size: upTo(100_000_000),
        solveRateGainPerEpoch: z.number().min(0).max(10).default(0),
      })
      .strict()
      .optional(),
    /**
     * The trainer and the weight update, for the step's time beyond its rollout (absent: both
     * free). `msPerToken`: trainer time per token of a kept trajectory (forward and backward,
     * old-policy forward); `weightSyncMs`: moving new weights into every replica.
     */
    training: z
      .object({ msPerToken: z.number().nonnegative(), weightSyncMs: z.number().nonnegative() })
      .strict()
      .optional(),
    replicas: upTo(4096),
    costModel: costModelSchema,
    kvCapacityTokens: positive,
    maxRunningRequests: upTo(1_000_000),
    /** Prefix-cache block size in tokens. */
    blockTokens: upTo(1_000_000).default(16),
    sandboxWorkers: upTo(1_000_000),
    /** The rollout's budgets: response tokens and tool calls per trajectory, and partial rollouts N (L_seg = maxTokens / N). */
    budgets: z
      .object({
        maxTokens: upTo(10_000_000),
        maxToolCalls: z.number().int().nonnegative().max(10_000),
        partialRollouts: upTo(1000),
      })
      .strict(),
    seed: z.number().int().default(0),
  })
  .strict()
  .superRefine((workload, context) => {
    if (workload.stepPrompts * workload.groupSize > MAX_STEP_TRAJECTORIES)
      context.addIssue({
        code: 'custom',
        path: ['stepPrompts'],
        message: `stepPrompts × groupSize is at most ${MAX_STEP_TRAJECTORIES.toLocaleString('en-US')} trajectories a step`,
      });
    const longest = longestContextTokens(workload);
    if (longest > workload.kvCapacityTokens)
      context.addIssue({
        code: 'custom',
        path: ['kvCapacityTokens'],
        message:
          `a trajectory can reach ${Math.ceil(longest)} tokens of context (longest prompt + response up to ` +
          `budgets.maxTokens + tool calls up to budgets.maxToolCalls with their output), more than one replica's KV holds: it could never run`,
      });
  });

/** The longest context a trajectory of the workload can reach (an unclipped tail counts at p = 1 − 1e-9). */
function longestContextTokens(workload: {
  promptTokens: z.infer<typeof distributionSchema>;
  responseTokens: z.infer<typeof distributionSchema>;
  toolOutputTokens: z.infer<typeof distributionSchema>;
  toolCalls: { max: number };
  budgets: { maxTokens: number; maxToolCalls: number };
}): number {
  const top = (distribution: z.infer<typeof distributionSchema>) => quantile(distribution, 1 - 1e-9);
  const calls = Math.min(workload.toolCalls.max, workload.budgets.maxToolCalls);
  return (
    top(workload.promptTokens) +
    Math.min(workload.budgets.maxTokens, top(workload.responseTokens)) +
    calls * (Math.min(TOOL_OUTPUT_LIMIT, top(workload.toolOutputTokens)) + TOOL_CALL_OVERHEAD_TOKENS)
  );
}

export type Workload = z.infer<typeof workloadSchema>;
export type WorkloadInput = z.input<typeof workloadSchema>;

/** Names of the built-in workloads (files under `workloads/`). */
export const BUILTIN_WORKLOADS = ['paper', 'paper-moe', 'heavy-tail', 'tool-heavy', 'paper-epochs'] as const;

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

/** A built-in workload by name, a JSON file by path, or `-`: standard input. */
export function loadWorkload(nameOrPath: string): Workload {
  const builtin = (BUILTIN_WORKLOADS as readonly string[]).includes(nameOrPath);
  const stdin = nameOrPath === '-';
  const path = builtin
    ? join(import.meta.dirname, 'workloads', `${nameOrPath}.json`)
    : stdin
      ? '(standard input)'
      : nameOrPath;
  let text: string;
  try {
    // A UTF-8 byte-order mark is accepted, as the other readers do.
    text = stripBom(readFileSync(stdin ? 0 : path, 'utf8'));
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
