import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { gradeAnswer, gradeLines, releaseSymbolicSessions } from '../../grader/index.ts';
import { openSandboxForGrading } from './grader-sandbox.ts';

type GradeCommandOptions = {
  prediction?: string;
  reference?: string;
  input?: string;
  sandbox?: string | boolean;
  timeoutMs: string;
};

export function registerGrade(program: Command): void {
  program
    .command('grade')
    .description('grade predictions against reference answers (one pair, or a JSONL file of pairs)')
    .option('--prediction <text>', 'a model response or a bare answer')
    .option('--reference <text>', 'the reference answer')
    .option('--input <file>', 'JSONL file, one {"prediction", "reference"} per line')
    .option(
      '--sandbox <url>',
      'sandbox server for the symbolic step (default: a local pool, started when needed)',
    )
    .option('--no-sandbox', 'skip the symbolic step')
    .option('--timeout-ms <ms>', 'time budget of the symbolic step per grade', '5000')
    .action(async (options: GradeCommandOptions) => {
      const single = options.prediction !== undefined || options.reference !== undefined;
      if (single === (options.input !== undefined)) {
        throw new Error('give either --prediction and --reference, or --input FILE');
      }
      if (single && (options.prediction === undefined || options.reference === undefined)) {
        throw new Error('--prediction and --reference go together');
      }
      const timeoutMs = Number(options.timeoutMs);
      if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
        throw new Error(`--timeout-ms: not a positive number: ${options.timeoutMs}`);
      const sandbox = options.sandbox === false ? null : openSandboxForGrading(options.sandbox);
      const gradeOptions = sandbox === null ? { timeoutMs } : { sandbox, timeoutMs };
      try {
        if (single) {
          const result = await gradeAnswer(options.prediction!, options.reference!, gradeOptions);
          process.stdout.write(`${JSON.stringify(result)}\n`);
          return;
        }
        const lines = createInterface({
          input: createReadStream(options.input!),
          crlfDelay: Number.POSITIVE_INFINITY,
        });
        const { errors } = await gradeLines(
          lines,
          (result) => {
            process.stdout.write(`${JSON.stringify(result)}\n`);
          },
          gradeOptions,
        );
        if (errors > 0) process.stderr.write(`agentmath grade: ${errors} bad line(s)\n`);
      } finally {
        if (sandbox !== null) {
          await releaseSymbolicSessions(sandbox);
          await sandbox.close();
        }
      }
    });
}
