/**
 * Held-out accuracy of a served model on arith eval problems, measured by the evaluation
 * runner (`runEval`, the pool and grading `agentmath eval` uses): each problem solved through
 * the real agent loop (`runAgent` with the SGLang client on the worker's `/generate`, code run
 * in a jailed local sandbox), its final answer graded by `gradeTrajectory` with `gradeAnswer`,
 * every trajectory appended to `outDir/trajectories.jsonl` with its grade, and `summary.json`
 * written at the end. So SFT's and RL's held-out figures are `eval`'s figures on the same
 * trajectories, and `agentmath report outDir` shows them. Greedy decoding by default;
 * `concurrency` trajectories are in flight at once so the worker batches them. Prompts are
 * encoded with the model's own tokenizer: `tokenizer` when given, else the one in the served
 * model's folder (`/get_model_info`), the byte-level one only for a byte model's preset.
 * An evaluation stopped by `signal`, or one in which no problem got a verdict (an outage), has
 * no figure: `HeldOutEvalMissing` says why (never an accuracy of 0 over 0 problems).
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { problemOnlyPrompt, runAgent } from '../agent/index.ts';
import type { PromptBuilder } from '../agent/prompt-builder.ts';
import { createByteLevelTokenizer, createEngine, loadTokenizer } from '../engine/index.ts';
import type { Tokenizer } from '../engine/tokenizer.ts';
import type { EvalRunnerConfig } from '../eval/eval-run-config.ts';
import { runEval } from '../eval/eval-runner.ts';
import { readRunTrajectories } from '../eval/run-folder.ts';
import { gradeTrajectory, readGrade } from '../eval/trajectory-grade.ts';
import { answersEquivalent, gradeAnswer } from '../grader/index.ts';
import type { Dialect } from '../protocol/dialect.ts';
import { getDialect } from '../protocol/index.ts';
import { createLocalSandbox } from '../sandbox/index.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import type { TrajectoryFinishReason } from '../trajectory/trajectory.ts';
import type { HeldOutEvalConfig } from './held-out-eval-config.ts';

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
  /** Trajectories whose grade had no verdict (grader outage): in no accuracy. */
  gradeUnavailable: number;
  /** Mean response length (tokens: model and interpreter segments). */
  responseTokensMean: number;
  finishReasons: Partial<Record<TrajectoryFinishReason, number>>;
  wallMs: number;
  /** The evaluation run folder (config.json, trajectories.jsonl, summary.json). */
  runDir: string;
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
  /** Base URL of a worker serving the model (SGLang `/generate`, or vLLM's completions). */
  engineUrl: string;
  /** The API it speaks (default sglang): a run's held-out evaluation speaks the run's. */
  api?: 'sglang' | 'vllm';
  /** Its bearer token, when it requires one. */
  apiKey?: string;
  problems: readonly HeldOutProblem[];
  contextTokens: number;
  /** How a problem becomes the first message(s) (default: the problem alone, as the byte model was trained). */
  prompt?: PromptBuilder;
  /** The code-block markup (default tags). */
  dialect?: Dialect;
  /** The served model's tokenizer (default: read from the served model's folder). */
  tokenizer?: Tokenizer;
  /** Folder of the evaluation run (created; see `fresh`). */
  outDir: string;
  /**
   * Start from an empty folder (default false: a folder left by an interrupted evaluation of
   * the same weights is resumed, its graded trajectories kept).
   */
  fresh?: boolean;
  concurrency?: number;
  maxToolCalls?: number;
  temperature?: number;
  onProgress?: (done: number, total: number, correct: number) => void;
  signal?: AbortSignal;
};

/** A held-out problem: an arith problem, or a benchmark's (level 0 unless it has one). */
export type HeldOutProblem = { id: string; problem: string; answer: string; level: number };

/** The benchmark name held-out runs are saved under. */
export const HELD_OUT_BENCHMARK = 'arith-held-out';

/** Runs every problem through the evaluation runner and reads its figures back. */
export async function evaluateHeldOut(options: HeldOutEvalOptions): Promise<HeldOutEvalResult> {
  const { problems, contextTokens, concurrency = 32, maxToolCalls = 4, temperature = 0 } = options;
  const started = Date.now();
  if (options.fresh === true) await rm(options.outDir, { recursive: true, force: true });
  const api = options.api ?? 'sglang';
  const engine = createEngine({
    api,
    url: options.engineUrl,
    name: 'embedded',
    maxConcurrency: concurrency,
    ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
  });
  const tokenizer = options.tokenizer ?? (await servedModelTokenizer(options.engineUrl));
  const dialect = options.dialect ?? getDialect('tags');
  // The arith programs need no preloaded modules; sessions open at a trajectory's first code block.
  const sandbox = createLocalSandbox({
    maxWorkers: Math.min(8, concurrency),
    warmWorkers: 2,
    preload: [],
    acquireTimeoutMs: 600_000,
  });
  const budgets = { maxTotalTokens: contextTokens, maxToolCalls, maxNewTokensPerTurn: contextTokens };
  const sampling = { temperature, topP: 1, seed: 0 };
  const benchmarkProblems = problems.map((problem) => ({
    id: problem.id,
    problem: problem.problem,
    answer: problem.answer,
  }));
  try {
    const result = await runEval({
      benchmark: { name: HELD_OUT_BENCHMARK, problems: benchmarkProblems },
      k: 1,
      concurrency,
      outDir: options.outDir,
      resume: true,
      config: {
        engine: { api, url: options.engineUrl },
        budgets,
        sampling,
        dialect: dialect.name,
      } satisfies Omit<HeldOutEvalConfig, keyof EvalRunnerConfig>,
      solve: (problem, sample, signal) =>
        runAgent(
          { id: problem.id, text: problem.problem },
          {
            engine,
            tokenizer,
            sandbox,
            dialect,
            prompt: options.prompt ?? problemOnlyPrompt,
            budgets,
            sampling,
            sample,
            signal,
          },
        ),
      grade: (trajectory, problem) => gradeTrajectory(trajectory, problem.answer, gradeAnswer, { sandbox }),
      equivalent: (left, right) => answersEquivalent(left, right, { sandbox }),
      onProgress: (progress) => options.onProgress?.(progress.done, progress.total, progress.correct),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    if (result.status === 'interrupted')
      throw new HeldOutEvalMissing(
        `stopped by ${String(options.signal?.reason ?? 'a signal')} after ${result.done} of ${result.total} problems`,
      );
    const { summary } = result;
    const trajectories = await readRunTrajectories(options.outDir);
    const byId = new Map(problems.map((problem) => [problem.id, problem]));
    const outcomes = trajectories
      .map((trajectory) => ({ trajectory, problem: byId.get(trajectory.problemId as string) }))
      .filter(
        (entry): entry is { trajectory: (typeof trajectories)[number]; problem: HeldOutProblem } =>
          entry.problem !== undefined && readGrade(entry.trajectory)?.correct !== null,
      )
      .map(({ trajectory, problem }) => ({
        trajectory,
        problem,
        correct: readGrade(trajectory)?.correct === true,
      }))
      .sort((a, b) => problems.indexOf(a.problem) - problems.indexOf(b.problem));
    // No verdict at all is no measurement (an outage): missing, never an accuracy of 0.
    if (outcomes.length === 0)
      throw new HeldOutEvalMissing(
        `no problem of ${problems.length} was graded (${result.failed} ended in an engine or sandbox error, ${summary.gradeUnavailable} without a grader verdict; see ${options.outDir})`,
      );
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
      usedTools: outcomes.filter(({ trajectory }) => trajectory.toolCalls.length > 0).length,
      toolCalls: outcomes.reduce((total, { trajectory }) => total + trajectory.toolCalls.length, 0),
      gradeUnavailable: summary.gradeUnavailable,
      responseTokensMean: summary.length.mean,
      finishReasons: summary.finishReasons as HeldOutEvalResult['finishReasons'],
      wallMs: Date.now() - started,
      runDir: options.outDir,
      samples: outcomes.slice(0, 4).map(({ trajectory, problem, correct }) => ({
        id: problem.id,
        level: problem.level,
        reference: problem.answer,
        answer: trajectory.answer,
        correct,
        response: trajectory.segments.map((segment) => segment.text).join(''),
      })),
    };
  } finally {
    engine.close();
    await sandbox.close();
  }
}

/**
 * The tokenizer of the model a worker serves: the one in its folder (`tokenizer.json`), or the
 * byte-level one when the worker serves a byte model's preset (no folder). Anything else is an
 * error: evaluating on another tokenizer's ids would measure nothing.
 */
export async function servedModelTokenizer(engineUrl: string): Promise<Tokenizer> {
  const url = `${engineUrl.replace(/\/+$/, '')}/get_model_info`;
  let info: { model_path?: unknown; tokenizer_path?: unknown; backend?: unknown };
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(30_000) });
    info = (await response.json()) as typeof info;
  } catch (error) {
    throw new HeldOutTokenizerError(`${url}: cannot read the served model (${(error as Error).message})`, {
      cause: error,
    });
  }
  const folder = typeof info.tokenizer_path === 'string' ? info.tokenizer_path : info.model_path;
  if (typeof folder === 'string' && existsSync(join(folder, 'tokenizer.json'))) return loadTokenizer(folder);
  if (info.backend === 'byte-gpt') return createByteLevelTokenizer();
  throw new HeldOutTokenizerError(
    `${url}: the served model (${String(folder)}) has no tokenizer.json; pass its tokenizer`,
  );
}

/** The evaluation gave no figure: stopped by a signal, or no problem was graded (an outage). */
export class HeldOutEvalMissing extends AgentMathError {
  constructor(reason: string) {
    super('HELD_OUT_EVAL_MISSING', `held-out evaluation: ${reason}`);
  }
}

export class HeldOutTokenizerError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('HELD_OUT_TOKENIZER_UNKNOWN', message, options);
  }
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
