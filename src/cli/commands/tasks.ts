import { existsSync, statSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { getDialect } from '../../protocol/index.ts';
import { createLocalSandbox } from '../../sandbox/index.ts';
import {
  ARITH_KINDS,
  ARITH_MAX_LEVEL,
  type ArithDatasetProgress,
  type ArithKind,
  type ArithSftDatasetSummary,
  arithEvalProblems,
  arithTrainProblems,
  writeArithSftDataset,
  writeArithTextSolution,
} from '../../tasks/index.ts';
import { choiceOption, integerOption, listOption, usageError } from '../cli-options.ts';

type ListOptions = {
  split: 'train' | 'eval';
  count: number;
  seed: string;
  levels?: number[];
  kinds?: ArithKind[];
  solution?: boolean;
  json?: boolean;
};
type WriteOptions = {
  out: string;
  count: number;
  seed: string;
  style: 'text' | 'tool';
  dialect: 'tags' | 'markdown';
  levels?: number[];
  kinds?: ArithKind[];
  maxBytes?: number;
  concurrency: number;
};

const levelsOption = listOption(integerOption({ min: 0, max: ARITH_MAX_LEVEL }));
const kindsOption = listOption(choiceOption(ARITH_KINDS));
const countOption = integerOption({ max: 10_000_000 });

export function registerTasks(program: Command): void {
  const tasks = program.command('tasks').description('synthetic task families with exact reference answers');

  tasks
    .command('arith')
    .description('print arith problems (train split from a seed, or the held-out eval split)')
    .option('--split <split>', 'train or eval', choiceOption(['train', 'eval'] as const), 'train' as const)
    .option('--count <n>', 'how many problems', countOption, 16)
    .option('--seed <seed>', 'seed of the train split', '0')
    .addOption(
      new Option('--dialect <name>', 'tool style: the code-block markup of the solutions')
        .choices(['tags', 'markdown'])
        .default('tags'),
    )
    .option('--levels <list>', 'levels to draw from, e.g. 1,2 (default 1..4; 5: digit groups)', levelsOption)
    .option('--kinds <list>', `kinds to draw from (default all: ${ARITH_KINDS.join(', ')})`, kindsOption)
    .option('--solution', 'print a text-only solution under each problem')
    .option('--json', 'print JSON lines {id, level, problem, answer}')
    .action((options: ListOptions) => {
      const { levels, kinds } = options;
      const set = {
        count: options.count,
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
    .option('--count <n>', 'how many training problems', countOption, 1000)
    .option('--seed <seed>', 'seed of the train split', '0')
    .option(
      '--style <style>',
      'text (step-by-step reasoning) or tool (code run in the local jailed sandbox)',
      choiceOption(['text', 'tool'] as const),
      'text' as const,
    )
    .addOption(
      new Option('--dialect <name>', 'tool style: the code-block markup of the solutions')
        .choices(['tags', 'markdown'])
        .default('tags'),
    )
    .option('--levels <list>', 'levels to draw from, e.g. 1,2 (default 1..4; 5: digit groups)', levelsOption)
    .option('--kinds <list>', `kinds to draw from (default all: ${ARITH_KINDS.join(', ')})`, kindsOption)
    .option(
      '--max-bytes <n>',
      'skip records longer than this (UTF-8 bytes of problem plus solution)',
      integerOption({ min: 1 }),
    )
    .option(
      '--concurrency <n>',
      'sandbox sessions at once (tool style)',
      integerOption({ min: 1, max: 256 }),
      2,
    )
    .action(async (options: WriteOptions) => {
      if (existsSync(options.out) && statSync(options.out).isDirectory())
        throw usageError(`--out ${options.out} is a folder; give the JSONL file to write or resume`);
      const { levels, kinds } = options;
      const common = {
        out: options.out,
        count: options.count,
        seed: options.seed,
        ...(levels ? { levels } : {}),
        ...(kinds ? { kinds } : {}),
        ...(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes }),
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
        const { concurrency } = options;
        const sandbox = createLocalSandbox({ maxWorkers: concurrency, warmWorkers: 0, preload: [] });
        try {
          const dialect = getDialect(options.dialect);
          summary = await writeArithSftDataset({ ...common, style: 'tool', sandbox, concurrency, dialect });
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
