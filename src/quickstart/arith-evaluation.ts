/**
 * One model's evaluation for the quickstarts: the model folder served by its own PyTorch worker
 * (the embedded byte model or a Hugging Face model), the problems run through the agent loop
 * with the jailed sandbox and graded, written as an eval run folder; and the right-or-wrong
 * verdicts of such a folder per problem, which the paired differences compare.
 */
import { type PromptBuilderName, promptBuilders, runAgent } from '../agent/index.ts';
import { startEmbeddedEngine } from '../engine/local/index.ts';
import type { BenchmarkProblem } from '../eval/benchmark-problem.ts';
import type { EvalRunnerConfig } from '../eval/eval-run-config.ts';
import { type EvalProgress, type EvalRunResult, runEval } from '../eval/eval-runner.ts';
import { readRunTrajectories } from '../eval/run-folder.ts';
import { gradeTrajectory, readGrade } from '../eval/trajectory-grade.ts';
import { answersEquivalent, gradeAnswer } from '../grader/index.ts';
import { type DialectName, getDialect } from '../protocol/index.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import type { ArithEvaluationConfig } from './arith-evaluation-config.ts';

export type ArithEvaluationOptions = {
  modelDir: string;
  runDir: string;
  problems: readonly BenchmarkProblem[];
  concurrency: number;
  sandbox: SandboxProvider;
  dialect: DialectName;
  prompt: PromptBuilderName;
  /** Prompt + response tokens of a trajectory, capped by the model's context length (default that length, else 768). */
  maxTotalTokens?: number;
  maxToolCalls: number;
  /** Continue the trajectories already in `runDir` (else it must be new or empty). */
  resume: boolean;
  /** Saved in the run's config.json beside what defines the run. */
  config: Pick<ArithEvaluationConfig, 'command' | 'stage' | 'style'>;
  /** Written into every trajectory's meta. */
  meta: Record<string, string>;
  signal?: AbortSignal;
  onProgress?: (progress: EvalProgress) => void;
};

/** Serves `modelDir`, evaluates it greedily on `problems` (k = 1), stops the worker. */
export async function evaluateOnArith(options: ArithEvaluationOptions): Promise<EvalRunResult> {
  const { sandbox, concurrency } = options;
  const embedded = await startEmbeddedEngine({ model: options.modelDir, maxConcurrency: concurrency });
  try {
    const agentConfig = {
      budgets: {
        maxTotalTokens: Math.min(
          options.maxTotalTokens ?? Number.POSITIVE_INFINITY,
          embedded.contextTokens ?? options.maxTotalTokens ?? 768,
        ),
        maxToolCalls: options.maxToolCalls,
      },
      sampling: { temperature: 0, topP: 1 },
    };
    const result = await runEval({
      benchmark: { name: 'arith', problems: options.problems },
      k: 1,
      concurrency,
      outDir: options.runDir,
      resume: options.resume,
      config: {
        ...options.config,
        model: options.modelDir,
        dialect: options.dialect,
        prompt: options.prompt,
        agent: agentConfig,
      } satisfies Omit<ArithEvaluationConfig, keyof EvalRunnerConfig>,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
      solve: (problem, sample, signal) =>
        runAgent(
          { id: problem.id, text: problem.problem },
          {
            ...agentConfig,
            engine: embedded.engine,
            tokenizer: embedded.tokenizer,
            sandbox,
            dialect: getDialect(options.dialect),
            prompt: promptBuilders[options.prompt],
            sample,
            signal,
            meta: { engine: embedded.engine.name, ...options.meta },
          },
        ),
      grade: (trajectory, problem) => gradeTrajectory(trajectory, problem.answer, gradeAnswer, { sandbox }),
      equivalent: (left, right) => answersEquivalent(left, right, { sandbox }),
    });
    return result;
  } finally {
    await embedded.close();
  }
}

/**
 * Right or wrong per problem of a run folder (the quickstarts sample once per problem, k = 1);
 * a trajectory without a verdict is left out.
 */
export async function problemGrades(runDir: string): Promise<Map<string, boolean>> {
  const grades = new Map<string, boolean>();
  for (const trajectory of await readRunTrajectories(runDir)) {
    const grade = readGrade(trajectory);
    if (trajectory.problemId === null || grade === null || grade.correct === null) continue;
    grades.set(trajectory.problemId, grade.correct);
  }
  return grades;
}
