/**
 * `agentmath bench agent`: the agent loop's own cost per turn (against an in-process instant
 * engine and the real jailed sandbox, engine and sandbox time subtracted) beside a bare
 * baseline loop, and many trajectories in flight at once (event-loop stall, memory).
 */
import type { Command } from 'commander';
import { type AgentBenchReport, runAgentBench } from '../../agent/index.ts';
import { createByteLevelTokenizer } from '../../engine/index.ts';
import { getDialect } from '../../protocol/index.ts';
import { createLocalSandbox } from '../../sandbox/index.ts';
import { integerOption } from '../cli-options.ts';

type AgentBenchFlags = {
  sequential: number;
  toolCalls: number;
  tokensPerTurn: number;
  concurrent: number;
  concurrentToolCalls: number;
  memoryTurns: number;
  workers: number;
  engineLatencyMs: number;
  json?: boolean;
};

const count = (min: number) => integerOption({ min, max: 1_000_000 });

export function registerAgentBench(bench: Command): void {
  bench
    .command('agent')
    .description('agent loop overhead per turn (p50/p99, vs a bare loop) and 1,000 concurrent trajectories')
    .option('--sequential <n>', 'trajectories run one after another for the overhead figures', count(2), 40)
    .option('--tool-calls <n>', 'code blocks per trajectory in the overhead phase', count(1), 4)
    .option('--tokens-per-turn <n>', 'model tokens per turn', count(16), 256)
    .option('--concurrent <n>', 'trajectories in flight at once', count(1), 1000)
    .option('--concurrent-tool-calls <n>', 'code blocks per trajectory in the concurrency phase', count(0), 1)
    .option('--memory-turns <n>', 'engine calls per trajectory in the memory phase', count(1), 8)
    .option('--workers <n>', 'sandbox workers (the pool size)', count(1), 8)
    .option(
      '--engine-latency-ms <ms>',
      'concurrency phases: replies spread over 0..ms (0: all at once)',
      count(0),
      20,
    )
    .option('--json', 'print the figures as JSON')
    .action(async (flags: AgentBenchFlags) => {
      const { workers } = flags;
      const sandbox = createLocalSandbox({
        maxWorkers: workers,
        warmWorkers: Math.min(workers, 4),
        preload: [],
        acquireTimeoutMs: 600_000,
      });
      const log = (line: string) => {
        if (!flags.json) process.stderr.write(`${line}\n`);
      };
      try {
        const report = await runAgentBench({
          sandbox,
          tokenizer: createByteLevelTokenizer(),
          dialect: getDialect('tags'),
          sequential: flags.sequential,
          toolCalls: flags.toolCalls,
          tokensPerTurn: flags.tokensPerTurn,
          concurrent: flags.concurrent,
          concurrentToolCalls: flags.concurrentToolCalls,
          memoryTurns: flags.memoryTurns,
          engineLatencyMs: flags.engineLatencyMs,
          onProgress: log,
        });
        process.stdout.write(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
      } finally {
        await sandbox.close();
      }
    });
}

function formatReport(report: AgentBenchReport): string {
  const ms = (value: number) => (Number.isFinite(value) ? `${value.toFixed(3)} ms` : 'n/a');
  const row = (name: string, quantiles: { p50: number; p99: number; count: number }) =>
    `${name.padEnd(34)}${ms(quantiles.p50).padStart(12)}${ms(quantiles.p99).padStart(12)}${String(quantiles.count).padStart(8)}`;
  const concurrent = report.concurrent;
  const memory = report.memory;
  const heap = memory.heapPerTrajectoryBytes;
  const mark = (met: boolean) => (met ? 'met' : 'NOT met');
  return [
    `${'per turn'.padEnd(34)}${'p50'.padStart(12)}${'p99'.padStart(12)}${'n'.padStart(8)}`,
    row('agent loop overhead', report.overheadPerTurnMs),
    row('bare loop overhead (baseline)', report.baselineOverheadPerTurnMs),
    row('sandbox call (subtracted)', report.sandboxCallMs),
    `ratio agent / baseline (p50): ${report.ratioP50.toFixed(2)}x`,
    '',
    `${concurrent.trajectories} concurrent trajectories, ${concurrent.toolCallsPerTrajectory} tool call(s) each` +
      `${'wall'.padStart(10)}${'max stall'.padStart(14)}${'p99 delay'.padStart(14)}`,
    `  agent loop${' '.repeat(45)}${`${(concurrent.wallMs / 1000).toFixed(2)} s`.padStart(10)}${ms(concurrent.maxEventLoopStallMs).padStart(14)}${ms(concurrent.p99EventLoopDelayMs).padStart(14)}`,
    `  bare loop (baseline)${' '.repeat(35)}${`${(concurrent.baselineWallMs / 1000).toFixed(2)} s`.padStart(10)}${ms(concurrent.baselineMaxEventLoopStallMs).padStart(14)}${ms(concurrent.baselineP99EventLoopDelayMs).padStart(14)}`,
    `  agent loop, no code (${report.loopOnly.turnsPerTrajectory} turns each)${' '.repeat(24)}${`${(report.loopOnly.wallMs / 1000).toFixed(2)} s`.padStart(10)}${ms(report.loopOnly.maxEventLoopStallMs).padStart(14)}${ms(report.loopOnly.p99EventLoopDelayMs).padStart(14)}`,
    `  finish reasons: ${Object.entries(concurrent.finishReasons)
      .map(([reason, n]) => `${reason} ${n}`)
      .join(', ')}`,
    '',
    `heap per trajectory in flight (${memory.trajectories} held, ${memory.contextTokens} context tokens each): ` +
      (heap === null ? 'n/a (no gc access)' : `${(heap / 1024).toFixed(1)} KiB`),
    '',
    `targets: overhead p50 <= ${report.targets.overheadP50Ms} ms: ${mark(report.targets.overheadMet)}; ` +
      `max stall <= ${report.targets.maxStallMs} ms (loop alone): ${mark(report.targets.stallMet)}`,
    '',
  ].join('\n');
}
