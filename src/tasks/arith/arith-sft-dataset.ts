/**
 * Writes an SFT dataset of arith solutions as JSONL (one `TaskSolution` per line), appending
 * each record as soon as it is made. Running again with the same options resumes: ids already
 * in the file are skipped, and a torn last line (from a crash mid-write) is cut away once every
 * other line was read as a record of ours (a file of other lines is refused untouched).
 * Tool solutions run their code in sandbox sessions, `concurrency` at a time; each session
 * serves many problems (every program is self-contained, so earlier state cannot change its
 * output) and is replaced after a timeout, memory limit or kill, and before a spaced problem
 * whose record opens with a failing program (its error names the cell by its number).
 */
import { open, readFile, truncate } from 'node:fs/promises';
import { ZodError } from 'zod';
import type { Dialect } from '../../protocol/dialect.ts';
import { getDialect } from '../../protocol/dialects.ts';
import type { SandboxProvider, SandboxSession } from '../../sandbox/types.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { RUN_FOLDER_REFUSED } from '../../shared/run-folder-check.ts';
import { solutionDialectIssue } from '../solution-dialect.ts';
import { taskSolutionSchema } from '../task-solution-schema.ts';
import type { TaskSolution } from '../types.ts';
import { arithTrainProblems } from './arith-problems.ts';
import type { ArithKind, ArithProblem } from './arith-spec.ts';
import { writeArithTextSolution } from './arith-text-solution.ts';
import { opensWithFailingProgram, writeArithToolSolution } from './arith-tool-solution.ts';

/**
 * A dataset file that cannot be resumed: a line that is not an arith record of ours, or records
 * of another style or dialect. Nothing in the file is changed; `RUN_FOLDER_REFUSED` (the CLI
 * exits 2), as for any output the job did not write.
 */
export class ArithDatasetFileError extends AgentMathError {
  constructor(file: string, line: number, detail: string) {
    super(
      RUN_FOLDER_REFUSED,
      `${file} line ${line}: ${detail}; nothing was changed: give a new file, or one \`tasks write-arith\` wrote with these options`,
    );
  }
}

/** The first problem zod found in a record, in a few words (`field "problem": expected object, …`). */
function firstIssue(error: unknown): string {
  if (error instanceof ZodError) {
    const [issue] = error.issues;
    if (issue === undefined) return 'invalid';
    const field = issue.path.length === 0 ? 'the record' : `field "${issue.path.join('.')}"`;
    const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more)` : '';
    return `${field}: ${issue.message}${more}`;
  }
  return (error as Error).message;
}

/** Why a problem got no record this run. */
export type ArithDatasetSkip = {
  id: string;
  reason: 'tool-failed' | 'mismatch' | 'too-long' | 'first-attempt-ran';
  detail: string;
};

export type ArithDatasetProgress = {
  total: number;
  /** Records found in the file before this run. */
  resumed: number;
  /** Records appended by this run so far. */
  written: number;
  skipped: number;
  /** The problem just handled. */
  last: { id: string; status: 'written' | ArithDatasetSkip['reason'] };
};

type Common = {
  out: string;
  count: number;
  seed: number | string;
  levels?: readonly number[];
  /** Problems per level in each turn of the rotation (arith-problems.ts; default 1 each). */
  levelWeights?: readonly number[];
  kinds?: readonly ArithKind[];
  /** Problems whose record (problem text plus solution, UTF-8 bytes) exceeds this are skipped. */
  maxBytes?: number;
  onProgress?: (progress: ArithDatasetProgress) => void;
};

export type ArithSftDatasetOptions = Common &
  (
    | { style: 'text' }
    | {
        style: 'tool';
        sandbox: SandboxProvider;
        /** Renders interpreter output; the tags dialect (the default). */
        dialect?: Dialect;
        /** Sessions running at once (default 2). */
        concurrency?: number;
        timeoutMs?: number;
      }
  );

export type ArithSftDatasetSummary = {
  out: string;
  total: number;
  resumed: number;
  written: number;
  skipped: ArithDatasetSkip[];
};

/** How every record line starts (`JSON.stringify` of a `TaskSolution`: its problem first). */
const RECORD_START = '{"problem":{';

/** Ids already in `file` (style-checked); cuts a torn final line. A missing file is empty. */
async function existingIds(file: string, style: 'tool' | 'text', dialect: Dialect): Promise<Set<string>> {
  let content: string;
  try {
    content = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Set();
    throw error;
  }
  const complete = content.slice(0, content.lastIndexOf('\n') + 1);
  const ids = new Set<string>();
  complete
    .split('\n')
    .slice(0, -1)
    .forEach((line, index) => {
      let record: TaskSolution;
      try {
        record = taskSolutionSchema.parse(JSON.parse(line));
      } catch (error) {
        throw new ArithDatasetFileError(
          file,
          index + 1,
          `not an arith solution record (${firstIssue(error)})`,
        );
      }
      if (record.style !== style) {
        throw new ArithDatasetFileError(
          file,
          index + 1,
          `style "${record.style}", but this run writes "${style}"`,
        );
      }
      const issue = solutionDialectIssue(record, dialect);
      if (issue !== null) {
        throw new ArithDatasetFileError(
          file,
          index + 1,
          `${issue}, but this run writes the ${dialect.name} dialect`,
        );
      }
      ids.add(record.problem.id);
    });
  // Only a file of our records loses its torn last line (a crash mid-write): records before it,
  // or the start every record has.
  if (complete.length < content.length) {
    const torn = content.slice(complete.length);
    if (ids.size === 0 && !torn.startsWith(RECORD_START))
      throw new ArithDatasetFileError(file, 1, 'not an arith solution record (no record, and no line end)');
    await truncate(file, Buffer.byteLength(complete));
  }
  return ids;
}

/** UTF-8 bytes of the problem and solution text: what a byte-level model's context holds. */
const recordBytes = (solution: TaskSolution): number =>
  Buffer.byteLength(solution.problem.problem) +
  solution.segments.reduce((total, segment) => total + Buffer.byteLength(segment.text), 0);

/** Generates `count` training problems from `seed` and writes their solutions to `out`. */
export async function writeArithSftDataset(options: ArithSftDatasetOptions): Promise<ArithSftDatasetSummary> {
  const {
    out,
    count,
    seed,
    levels,
    levelWeights,
    kinds,
    maxBytes = Number.POSITIVE_INFINITY,
    onProgress,
  } = options;
  const problems = arithTrainProblems({
    seed,
    count,
    ...(levels ? { levels } : {}),
    ...(levelWeights ? { levelWeights } : {}),
    ...(kinds ? { kinds } : {}),
  });
  const done = await existingIds(
    out,
    options.style,
    (options.style === 'tool' ? options.dialect : undefined) ?? getDialect('tags'),
  );
  const pending = problems.filter((problem) => !done.has(problem.id));
  const summary: ArithSftDatasetSummary = {
    out,
    total: problems.length,
    resumed: done.size,
    written: 0,
    skipped: [],
  };
  const file = await open(out, 'a');
  let writes = Promise.resolve();

  const report = (id: string, status: ArithDatasetProgress['last']['status']) =>
    onProgress?.({
      total: summary.total,
      resumed: summary.resumed,
      written: summary.written,
      skipped: summary.skipped.length,
      last: { id, status },
    });
  const accept = async (solution: TaskSolution): Promise<void> => {
    if (recordBytes(solution) > maxBytes) {
      summary.skipped.push({
        id: solution.problem.id,
        reason: 'too-long',
        detail: `${recordBytes(solution)} bytes`,
      });
      report(solution.problem.id, 'too-long');
      return;
    }
    // One write at a time: concurrent writes to one handle may interleave.
    writes = writes.then(() => file.write(`${JSON.stringify(solution)}\n`).then(() => undefined));
    await writes;
    summary.written++;
    report(solution.problem.id, 'written');
  };
  const skip = (id: string, reason: ArithDatasetSkip['reason'], detail: string) => {
    summary.skipped.push({ id, reason, detail });
    report(id, reason);
  };

  try {
    if (options.style === 'text') {
      for (const problem of pending) await accept(writeArithTextSolution(problem));
    } else {
      const { sandbox, dialect, concurrency = 2, timeoutMs } = options;
      let next = 0;
      const worker = async (): Promise<void> => {
        let session: SandboxSession | null = null;
        try {
          while (next < pending.length) {
            const problem: ArithProblem = pending[next++]!;
            if (session !== null && opensWithFailingProgram(problem)) {
              await session.close(); // the failing program's error must read `<cell-1>`, as in a rollout
              session = null;
            }
            session ??= await sandbox.openSession();
            const result = await writeArithToolSolution(problem, {
              session,
              ...(dialect === undefined ? {} : { dialect }),
              ...(timeoutMs === undefined ? {} : { timeoutMs }),
            });
            if (result.status === 'ok') await accept(result.solution);
            else if (result.status === 'mismatch') {
              skip(problem.id, 'mismatch', `printed ${result.output}, expected ${result.expected}`);
            } else {
              if (result.status === 'first-attempt-ran') {
                skip(
                  problem.id,
                  'first-attempt-ran',
                  `the program meant to fail ended ${result.outcome.status}`,
                );
              } else skip(problem.id, 'tool-failed', result.outcome.status);
              if (result.outcome.status !== 'ok' && result.outcome.status !== 'error') {
                await session.close(); // its state is gone or suspect: start a fresh one
                session = null;
              }
            }
          }
        } finally {
          await session?.close();
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, pending.length)) }, worker));
    }
  } finally {
    await writes;
    await file.close();
  }
  return summary;
}
