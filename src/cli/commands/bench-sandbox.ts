/** `agentmath bench sandbox`: wiring to the sandbox benchmark. */
import type { Command } from 'commander';
import { formatSandboxBench, runSandboxBench } from '../../sandbox/sandbox-bench.ts';
import { integerOption } from '../cli-options.ts';

const integer = integerOption({ min: 1, max: 1_000_000 });

/** Adds `bench sandbox` to the `bench` group. */
export function registerSandboxBench(bench: Command): void {
  bench
    .command('sandbox')
    .description(
      'sandbox latency (trivial call, SymPy, new session), throughput at 8/32, vs fresh python3 -c; session-burst stalls',
    )
    .option('--json', 'print the figures as JSON')
    .option('--trivial-calls <n>', 'samples of the trivial call', integer, 500)
    .option('--sympy-calls <n>', 'samples of the SymPy snippet', integer, 60)
    .option('--baseline-calls <n>', 'samples of the fresh-python baseline', integer, 12)
    .option('--churn-sessions <n>', 'sessions opened and closed at once (event-loop stalls)', integer, 100)
    .action(
      async (flags: {
        json?: boolean;
        trivialCalls: number;
        sympyCalls: number;
        baselineCalls: number;
        churnSessions: number;
      }) => {
        const result = await runSandboxBench({
          trivialCalls: flags.trivialCalls,
          sympyCalls: flags.sympyCalls,
          baselineCalls: flags.baselineCalls,
          churnSessions: flags.churnSessions,
          log: (line) => process.stderr.write(`${line}\n`),
        });
        process.stdout.write(
          flags.json ? `${JSON.stringify(result, null, 2)}\n` : formatSandboxBench(result),
        );
      },
    );
}
