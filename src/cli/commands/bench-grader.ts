import type { Command } from 'commander';
import { benchGrader } from '../../bench/grader-bench.ts';
import { loadReferenceAnswers, runGraderDifferential } from '../../bench/grader-differential.ts';
import { resolveDataDir } from '../../eval/benchmark-data-dir.ts';
import { releaseSymbolicSessions } from '../../grader/index.ts';
import type { SandboxProvider } from '../../sandbox/types.ts';
import { choiceOption, integerOption, usageError } from '../cli-options.ts';
import { openSandboxForGrading } from './grader-sandbox.ts';

type GraderBenchCommandOptions = {
  json?: boolean;
  rounds: number;
  sandbox?: string | boolean;
  against?: 'math-verify';
  dataDir?: string;
};

/**
 * `agentmath bench grader`: fast-path throughput and symbolic-path latency; with
 * `--against math-verify`, the differential check against Math-Verify instead.
 */
export function registerGraderBench(bench: Command): void {
  bench
    .command('grader')
    .description('grader speed: fast path grades/s (one core), symbolic path p50/p99 with a warm sandbox')
    .option('--json', 'print the figures as JSON')
    .option(
      '--rounds <n>',
      'passes over the fast-path corpus pairs',
      integerOption({ min: 1, max: 1_000_000 }),
      50,
    )
    .option('--sandbox <url>', 'sandbox server (default: a local pool)')
    .option('--no-sandbox', 'fast path only')
    .option(
      '--against <grader>',
      'grade the corpus generated from the benchmark references with ours and this grader (math-verify), print agreement, false positives and negatives',
      choiceOption(['math-verify'] as const),
    )
    .option(
      '--data-dir <folder>',
      'benchmark folder for --against (default: AGENTMATH_DATA_DIR, then ../shared/data/benchmarks)',
    )
    .action(async (options: GraderBenchCommandOptions) => {
      if (options.against !== undefined && options.sandbox === false) {
        throw usageError(
          '--against math-verify runs Math-Verify in the sandbox: it cannot be used with --no-sandbox',
        );
      }
      const sandbox = options.sandbox === false ? undefined : openSandboxForGrading(options.sandbox);
      try {
        if (options.against !== undefined && sandbox !== undefined) {
          await printDifferential(sandbox, options);
          return;
        }
        const report = await benchGrader({
          fastRounds: options.rounds,
          ...(sandbox === undefined ? {} : { sandbox }),
        });
        if (options.json) {
          process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
          return;
        }
        const { fast, longResponses, symbolic } = report;
        const rows: [string, string, string][] = [
          ['fast path', 'grades/s (1 core)', fast.gradesPerSecond.toFixed(0)],
          ['fast path', 'grades per CPU-second', fast.gradesPerCpuSecond.toFixed(0)],
          ['fast path', 'p50 / p99 per grade', `${fast.p50Us.toFixed(1)} µs / ${fast.p99Us.toFixed(1)} µs`],
          ['baseline', 'string equality grades/s', fast.baselineGradesPerSecond.toFixed(0)],
          ['ratio', 'fast path / baseline', fast.ratio.toFixed(3)],
        ];
        for (const long of longResponses) {
          rows.push([
            `extraction · ${long.shape}`,
            'p50 CPU 1 MB / 2 MB (ratio)',
            `${long.p50Ms1Mb.toFixed(1)} ms / ${long.p50Ms2Mb.toFixed(1)} ms (${long.ratio.toFixed(2)})`,
          ]);
        }
        if (symbolic !== null) {
          rows.push(
            [
              'symbolic (warm)',
              'p50 / p99 per grade',
              `${symbolic.p50Ms.toFixed(1)} ms / ${symbolic.p99Ms.toFixed(1)} ms`,
            ],
            ['symbolic (cold)', 'p50 per check', `${symbolic.coldP50Ms.toFixed(0)} ms`],
            ['ratio', 'cold / warm p50', symbolic.warmSpeedup.toFixed(1)],
          );
        }
        const width = Math.max(...rows.map((row) => row[0].length + row[1].length + 3));
        for (const [group, name, value] of rows)
          process.stdout.write(`${`${group} · ${name}`.padEnd(width)}  ${value}\n`);
        process.stdout.write(
          `(${fast.grades} fast grades over ${fast.pairs} pairs${symbolic ? `; ${symbolic.grades} symbolic grades over ${symbolic.pairs} pairs` : ''})\n`,
        );
      } finally {
        if (sandbox !== undefined) {
          await releaseSymbolicSessions(sandbox);
          await sandbox.close();
        }
      }
    });
}

/** Runs the differential check against Math-Verify and prints its figures. */
async function printDifferential(
  sandbox: SandboxProvider,
  options: GraderBenchCommandOptions,
): Promise<void> {
  const directory = resolveDataDir({ dataDir: options.dataDir });
  if (directory === null) {
    throw usageError('no benchmark folder found: pass --data-dir or set AGENTMATH_DATA_DIR');
  }
  const report = await runGraderDifferential({ references: loadReferenceAnswers(directory), sandbox });
  if (options.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return;
  }
  const percent = (value: number) => `${(100 * value).toFixed(2)}%`;
  const lines = [
    `differential corpus from ${directory}: ${report.pairs} pairs graded by both (${report.outages} without a verdict)`,
    `agreement        ${percent(report.agreement)} (${report.agreements}/${report.pairs})`,
    `false positives  ${percent(report.falsePositiveRate)} (${report.falsePositives}: ours correct, Math-Verify wrong)`,
    `false negatives  ${percent(report.falseNegativeRate)} (${report.falseNegatives}: ours wrong, Math-Verify correct)`,
    `throughput       ours ${report.oursGradesPerSecond.toFixed(0)} grades/s, Math-Verify ${report.mathVerifyGradesPerSecond.toFixed(0)} grades/s (wall clock, one at a time, jailed sandbox)`,
    'by kind (agreements/pairs):',
    ...report.byKind.map(({ kind, pairs, agreements }) => `  ${kind.padEnd(22)} ${agreements}/${pairs}`),
    `disagreements (${report.disagreements.length}):`,
    ...report.disagreements.map(
      (item) =>
        `  ${item.id}: ours ${item.ours.correct} (${item.ours.reason}), Math-Verify ${item.mathVerify.correct} · ${JSON.stringify(item.prediction)} vs ${JSON.stringify(item.reference)}`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
