import type { Command } from 'commander';
import { createLocalSandbox } from '../../sandbox/index.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import {
  ARITH_KINDS,
  type ArithDatasetProgress,
  type ArithKind,
  type ArithSftDatasetSummary,
  arithEvalProblems,
  arithTrainProblems,
  writeArithSftDataset,
  writeArithTextSolution,
} from '../../tasks/index.ts';

type ListOptions = {
  split: string;
  count: string;
  seed: string;
  levels?: string;
  kinds?: string;
  solution?: boolean;
  json?: boolean;
};
type WriteOptions = {
  out: string;
  count: string;
  seed: string;
  style: string;
  levels?: string;
  kinds?: string;
  maxBytes?: string;
  concurrency: string;
};

function parseLevels(text: string | undefined): number[] | undefined {
  if (text === undefined) return undefined;
  const levels = text.split(',').map(Number);
  if (levels.some((level) => !Number.isInteger(level) || level < 1 || level > 4)) {
    throw new AgentMathError(
      'INVALID_OPTION',
      `--levels: expected numbers 1..4 separated by commas, got "${text}"`,
    );
  }
  return levels;
}

function parseKinds(text: string | undefined): ArithKind[] | undefined {
  if (text === undefined) return undefined;
  const kinds = text.split(',');
  const unknown = kinds.filter((kind) => !(ARITH_KINDS as readonly string[]).includes(kind));
  if (unknown.length > 0)
    throw new AgentMathError(
      'INVALID_OPTION',
      `--kinds: unknown ${unknown.join(', ')}; known: ${ARITH_KINDS.join(', ')}`,
    );
  return kinds as ArithKind[];
}

function parseCount(text: string, flag: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0)
    throw new AgentMathError('INVALID_OPTION', `${flag}: expected a whole number, got "${text}"`);
  return value;
}

export function registerTasks(program: Command): void {
  const tasks = program.command('tasks').description('synthetic task families with exact reference answers');

  tasks
    .command('arith')
    .description('print arith problems (train split from a seed, or the held-out eval split)')
    .option('--split <split>', 'train or eval', 'train')
    .option('--count <n>', 'how many problems', '16')
    .option('--seed <seed>', 'seed of the train split', '0')
    .option('--levels <list>', 'levels to draw from, e.g. 1,2 (default 1..4)')
    .option('--kinds <list>', `kinds to draw from (default all: ${ARITH_KINDS.join(', ')})`)
    .option('--solution', 'print a text-only solution under each problem')
    .option('--json', 'print JSON lines {id, level, problem, answer}')
    .action((options: ListOptions) => {
      if (options.split !== 'train' && options.split !== 'eval')
        throw new AgentMathError('INVALID_OPTION', '--split: expected train or eval');
      const levels = parseLevels(options.levels);
      const kinds = parseKinds(options.kinds);
      const set = {
        count: parseCount(options.count, '--count'),
        ...(levels ? { levels } : {}),
        ...(kinds ? { kinds } : {}),
      };
      const problems =
        options.split === 'train'
          ? arithTrainProblems({ ...set, seed: options.seed })
          : arithEvalProblems(set);
      for (const problem of problems) {
        const { id, level, problem: text, answer } = problem;
        if (options.json) process.stdout.write(`${JSON.stringify({ id, level, problem: text, answer })}\n`);
        else process.stdout.write(`${id}  L${level}  ${text}  → ${answer}\n`);
        if (options.solution && !options.json) {
          process.stdout.write(`${writeArithTextSolution(problem).segments[0]!.text}\n\n`);
        }
      }
    });

  tasks
    .command('write-arith')
    .description('write an SFT dataset of arith solutions as JSONL (resumes an existing file)')
    .requiredOption('--out <file>', 'the JSONL file to write or resume')
    .option('--count <n>', 'how many training problems', '1000')
    .option('--seed <seed>', 'seed of the train split', '0')
    .option(
      '--style <style>',
      'text (step-by-step reasoning) or tool (code run in the local jailed sandbox)',
      'text',
    )
    .option('--levels <list>', 'levels to draw from, e.g. 1,2 (default 1..4)')
    .option('--kinds <list>', 'kinds to draw from (default all)')
    .option('--max-bytes <n>', 'skip records longer than this (UTF-8 bytes of problem plus solution)')
    .option('--concurrency <n>', 'sandbox sessions at once (tool style)', '2')
    .action(async (options: WriteOptions) => {
      if (options.style !== 'text' && options.style !== 'tool') {
        throw new AgentMathError('INVALID_OPTION', `--style: expected text or tool, got "${options.style}"`);
      }
      const levels = parseLevels(options.levels);
      const kinds = parseKinds(options.kinds);
      const common = {
        out: options.out,
        count: parseCount(options.count, '--count'),
        seed: options.seed,
        ...(levels ? { levels } : {}),
        ...(kinds ? { kinds } : {}),
        ...(options.maxBytes === undefined ? {} : { maxBytes: parseCount(options.maxBytes, '--max-bytes') }),
        onProgress: (progress: ArithDatasetProgress) => {
          const done = progress.resumed + progress.written + progress.skipped;
          if (progress.last.status !== 'written' || done % 100 === 0 || done === progress.total) {
            process.stderr.write(`${done}/${progress.total} ${progress.last.id} ${progress.last.status}\n`);
          }
        },
      };
      let summary: ArithSftDatasetSummary;
      if (options.style === 'text') summary = await writeArithSftDataset({ ...common, style: 'text' });
      else {
        const concurrency = Math.max(1, parseCount(options.concurrency, '--concurrency'));
        const sandbox = createLocalSandbox({ maxWorkers: concurrency, warmWorkers: 0, preload: [] });
        try {
          summary = await writeArithSftDataset({ ...common, style: 'tool', sandbox, concurrency });
        } finally {
          await sandbox.close();
        }
      }
      const { out, total, resumed, written, skipped } = summary;
      process.stdout.write(
        `${out}: ${total} problems, ${resumed} already there, ${written} written, ${skipped.length} skipped\n`,
      );
    });
}
