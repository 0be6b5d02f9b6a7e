/**
 * Errors the evaluation harness throws: bad benchmark input, an unknown benchmark name, and an
 * output folder that would mix two runs. Each carries a stable `code`.
 */
import { AgentMathError } from '../shared/agentmath-error.ts';

/** A benchmark file that cannot be read as problems; the message names the file and line. */
export class BenchmarkFormatError extends AgentMathError {
  readonly file: string;
  readonly line: number | null;

  constructor(file: string, line: number | null, detail: string, options?: { cause?: unknown }) {
    super(
      'BENCHMARK_FORMAT',
      `benchmark file ${file}${line === null ? '' : ` line ${line}`}: ${detail}`,
      options,
    );
    this.file = file;
    this.line = line;
  }
}

/** A `--bench` value that is neither a file, a preset found in the data folder, nor a built-in. */
export class BenchmarkNotFoundError extends AgentMathError {
  constructor(message: string) {
    super('BENCHMARK_NOT_FOUND', message);
  }
}

/** An output folder that already holds a run, when the caller did not ask to resume it. */
export class EvalOutputExistsError extends AgentMathError {
  constructor(outDir: string) {
    super(
      'EVAL_OUT_DIR_NOT_EMPTY',
      `output folder ${outDir} is not empty: pass --resume to continue the run it holds, or choose another --out`,
    );
  }
}

/** A resumed run whose saved configuration names a different benchmark or sampling. */
export class EvalResumeMismatchError extends AgentMathError {
  constructor(outDir: string, detail: string) {
    super('EVAL_RESUME_MISMATCH', `cannot resume ${outDir}: ${detail}`);
  }
}

/** A trajectories file or summary in a run folder that cannot be read. */
export class EvalRunFormatError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('EVAL_RUN_FORMAT', message, options);
  }
}

/** Too many trajectories in a row ended in an engine or sandbox error: the run stops. */
export class EvalInfrastructureError extends AgentMathError {
  constructor(count: number, last: { code: string; message: string } | undefined) {
    super(
      'EVAL_INFRASTRUCTURE_FAILING',
      `${count} trajectories in a row ended in an error, last: ${
        last === undefined ? 'no detail' : `[${last.code}] ${last.message}`
      }; check the engine and sandbox, then resume (failed trajectories are in errors.jsonl)`,
    );
  }
}
