import type { Command } from 'commander';
import { benchGrader, releaseSymbolicSessions } from '../../grader/index.ts';
import { integerOption } from '../cli-options.ts';
import { openSandboxForGrading } from './grader-sandbox.ts';

/** `agentmath bench grader`: fast-path throughput and symbolic-path latency. */
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
    .action(async (options: { json?: boolean; rounds: number; sandbox?: string | boolean }) => {
      const sandbox = options.sandbox === false ? undefined : openSandboxForGrading(options.sandbox);
      try {
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
