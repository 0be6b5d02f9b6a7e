/**
 * `agentmath grade`: one prediction against one reference, or a JSONL file of pairs (`-` reads
 * standard input), one JSON result per line on stdout, by our grader or (`--grader math-verify`)
 * by Math-Verify in the sandbox's jail. Exit status 3 when any grade has no
 * verdict (`grader-unavailable`: the symbolic step's sandbox was down), else 1 when any line was
 * invalid, 0 otherwise.
 */
import type { Command } from 'commander';
import {
  DEFAULT_MATH_VERIFY_TIMEOUT_MS,
  DEFAULT_SYMBOLIC_TIMEOUT_MS,
  GRADER_NAMES,
  type GraderName,
  gradeLines,
  graderFor,
  releaseSymbolicSessions,
} from '../../grader/index.ts';
import { readTextLines } from '../../shared/text-input.ts';
import { choiceOption, integerOption, usageError } from '../cli-options.ts';
import { onShutdown } from '../process-lifecycle.ts';
import { openSandboxForGrading } from './grader-sandbox.ts';

/** Exit status when some grade has no verdict (an outage, not a wrong answer). */
const UNAVAILABLE_EXIT_CODE = 3;

type GradeCommandOptions = {
  prediction?: string;
  reference?: string;
  input?: string;
  sandbox?: string | boolean;
  timeoutMs?: number;
  grader: GraderName;
};

export function registerGrade(program: Command): void {
  program
    .command('grade')
    .description('grade predictions against reference answers (one pair, or a JSONL file of pairs)')
    .option('--prediction <text>', 'a model response or a bare answer')
    .option('--reference <text>', 'the reference answer')
    .option('--input <file>', 'JSONL file, one {"prediction", "reference"} per line (- for standard input)')
    .option(
      '--sandbox <url>',
      'sandbox server for the symbolic step (default: a local pool, started when needed)',
    )
    .option('--no-sandbox', 'skip the symbolic step (ours only)')
    .option(
      '--grader <name>',
      `who decides: ${GRADER_NAMES.join(' or ')} (Math-Verify runs in the sandbox's jail)`,
      choiceOption(GRADER_NAMES),
      'ours',
    )
    .option(
      '--timeout-ms <ms>',
      `time budget per grade of the symbolic step (default ${DEFAULT_SYMBOLIC_TIMEOUT_MS}) or of Math-Verify (default ${DEFAULT_MATH_VERIFY_TIMEOUT_MS})`,
      integerOption({ min: 1 }),
    )
    .action(async (options: GradeCommandOptions) => {
      const single = options.prediction !== undefined || options.reference !== undefined;
      if (single === (options.input !== undefined)) {
        throw usageError('give either --prediction and --reference, or --input FILE');
      }
      if (single && (options.prediction === undefined || options.reference === undefined)) {
        throw usageError('--prediction and --reference go together');
      }
      if (options.grader === 'math-verify' && options.sandbox === false) {
        throw usageError('--grader math-verify runs in the sandbox: it cannot be used with --no-sandbox');
      }
      const grader = graderFor(options.grader);
      const timeoutMs =
        options.timeoutMs ??
        (options.grader === 'math-verify' ? DEFAULT_MATH_VERIFY_TIMEOUT_MS : DEFAULT_SYMBOLIC_TIMEOUT_MS);
      const sandbox = options.sandbox === false ? null : openSandboxForGrading(options.sandbox);
      const gradeOptions = sandbox === null ? { timeoutMs } : { sandbox, timeoutMs };
      const unregister = onShutdown(async () => {
        await sandbox?.close();
      });
      try {
        if (single) {
          const result = await grader(options.prediction!, options.reference!, gradeOptions);
          process.stdout.write(`${JSON.stringify(result)}\n`);
          if (result.correct === null) reportUnavailable(1);
          return;
        }
        const { errors, unavailable } = await gradeLines(
          readTextLines(options.input!, 'grade input'),
          (result) => {
            process.stdout.write(`${JSON.stringify(result)}\n`);
          },
          gradeOptions,
          grader,
        );
        if (errors > 0) {
          process.stderr.write(`agentmath grade: ${errors} bad line(s)\n`);
          process.exitCode = 1;
        }
        if (unavailable > 0) reportUnavailable(unavailable);
      } finally {
        unregister();
        if (sandbox !== null) {
          await releaseSymbolicSessions(sandbox);
          await sandbox.close();
        }
      }
    });
}

/** Grades without a verdict (the symbolic step's sandbox was down): said on stderr, exit 3. */
function reportUnavailable(count: number): void {
  process.stderr.write(
    `agentmath grade: ${count} grade(s) without a verdict (grader-unavailable: the sandbox could not run the symbolic step or Math-Verify); grade them again when it is up\n`,
  );
  process.exitCode = UNAVAILABLE_EXIT_CODE;
}
