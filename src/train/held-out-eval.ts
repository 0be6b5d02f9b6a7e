/**
 * Held-out accuracy of a served model on arith eval problems, measured through the real
 * agent loop: `runAgent` with the SGLang client on the worker's `/generate`, code run in a
 * jailed local sandbox, the final answer graded with `gradeAnswer`. Greedy decoding by
 * default; `concurrency` trajectories are in flight at once so the worker batches them.
 */
import { problemOnlyPrompt, runAgent } from '../agent/index.ts';
import { createByteLevelTokenizer, createEngine } from '../engine/index.ts';
import { gradeAnswer } from '../grader/index.ts';
import { getDialect } from '../protocol/index.ts';
import { createLocalSandbox } from '../sandbox/index.ts';
import type { ArithProblem } from '../tasks/index.ts';
import type { TrajectoryFinishReason } from '../trajectory/trajectory.ts';

/** Accuracy of one difficulty level (or of all of them). */
export type LevelAccuracy = { level: number | 'all'; problems: number; correct: number; accuracy: number };

export type HeldOutEvalResult = {
  problems: number;
  correct: number;
  accuracy: number;
  byLevel: LevelAccuracy[];
  /** Trajectories that ran at least one code block. */
  usedTools: number;
  toolCalls: number;
  finishReasons: Partial<Record<TrajectoryFinishReason, number>>;
  wallMs: number;
  /** A few trajectories, for the report: problem, reference, the model's full response. */
  samples: Array<{
    id: string;
    level: number;
    reference: string;
    answer: string | null;
    correct: boolean;
    response: string;
  }>;
};

export type HeldOutEvalOptions = {
  /** Base URL of a worker serving the model (SGLang `/generate`). */
  engineUrl: string;
  problems: readonly ArithProblem[];
  contextTokens: number;
  concurrency?: number;
  maxToolCalls?: number;
  temperature?: number;
  onProgress?: (done: number, total: number, correct: number) => void;
  signal?: AbortSignal;
};

/** Runs every problem through the agent loop and grades the answers. */
export async function evaluateHeldOut(options: HeldOutEvalOptions): Promise<HeldOutEvalResult> {
  const { problems, contextTokens, concurrency = 32, maxToolCalls = 4, temperature = 0 } = options;
  const started = Date.now();
  const engine = createEngine({
    api: 'sglang',
    url: options.engineUrl,
    name: 'embedded',
    maxConcurrency: concurrency,
  });
  const tokenizer = createByteLevelTokenizer();
  const dialect = getDialect('tags');
  // The arith programs need no preloaded modules; sessions open at a trajectory's first code block.
  const sandbox = createLocalSandbox({
    maxWorkers: Math.min(8, concurrency),
    warmWorkers: 2,
    preload: [],
    acquireTimeoutMs: 600_000,
  });
  const outcomes: Array<{
    problem: ArithProblem;
    correct: boolean;
    answer: string | null;
    response: string;
  }> = [];
  const finishReasons: HeldOutEvalResult['finishReasons'] = {};
  let usedTools = 0;
  let toolCalls = 0;
  let correctSoFar = 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < problems.length) {
      if (options.signal?.aborted) return;
      const problem = problems[next++]!;
      const trajectory = await runAgent(
        { id: problem.id, text: problem.problem },
        {
          engine,
          tokenizer,
          sandbox,
          dialect,
          prompt: problemOnlyPrompt,
          budgets: { maxTotalTokens: contextTokens, maxToolCalls, maxNewTokensPerTurn: contextTokens },
          sampling: { temperature, topP: 1, seed: 0 },
          ...(options.signal === undefined ? {} : { signal: options.signal }),
        },
      );
      const response = trajectory.segments.map((segment) => segment.text).join('');
      // Arithmetic answers: no symbolic step, so a grade is never unavailable here.
      const grade = await gradeAnswer(response, problem.answer);
      const reason = trajectory.finish?.reason;
      if (reason !== undefined) finishReasons[reason] = (finishReasons[reason] ?? 0) + 1;
      if (trajectory.toolCalls.length > 0) usedTools++;
      toolCalls += trajectory.toolCalls.length;
      if (grade.correct) correctSoFar++;
      outcomes.push({ problem, correct: grade.correct === true, answer: trajectory.answer, response });
      options.onProgress?.(outcomes.length, problems.length, correctSoFar);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, problems.length)) }, worker));
  } finally {
    engine.close();
    await sandbox.close();
  }
  outcomes.sort((a, b) => problems.indexOf(a.problem) - problems.indexOf(b.problem));
  const overall = accuracyOf('all', outcomes);
  return {
    problems: overall.problems,
    correct: overall.correct,
    accuracy: overall.accuracy,
    byLevel: [...new Set(outcomes.map((outcome) => outcome.problem.level))]
      .sort((a, b) => a - b)
      .map((level) =>
        accuracyOf(
          level,
          outcomes.filter((outcome) => outcome.problem.level === level),
        ),
      ),
    usedTools,
    toolCalls,
    finishReasons,
    wallMs: Date.now() - started,
    samples: outcomes.slice(0, 4).map(({ problem, correct, answer, response }) => ({
      id: problem.id,
      level: problem.level,
      reference: problem.answer,
      answer,
      correct,
      response,
    })),
  };
}

function accuracyOf(level: number | 'all', outcomes: ReadonlyArray<{ correct: boolean }>): LevelAccuracy {
  const correct = outcomes.filter((outcome) => outcome.correct).length;
  return {
    level,
    problems: outcomes.length,
    correct,
    accuracy: outcomes.length === 0 ? 0 : correct / outcomes.length,
  };
}
