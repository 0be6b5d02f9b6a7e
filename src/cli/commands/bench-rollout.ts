/**
 * `agentmath bench rollout`: the four rollout configurations side by side on K embedded
 * replicas of the trained arith model (see `src/rollout/rollout-bench.ts`).
 */
import type { Command } from 'commander';
import { promptBuilders } from '../../agent/index.ts';
import { startEmbeddedEngine } from '../../engine/local/index.ts';
import { gradeTrajectory } from '../../eval/index.ts';
import { gradeAnswer } from '../../grader/index.ts';
import { findEmbeddedModel } from '../../model/index.ts';
import { getDialect } from '../../protocol/index.ts';
import { type RolloutBenchRow, runRolloutBench } from '../../rollout/rollout-bench.ts';
import { createLocalSandbox } from '../../sandbox/index.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { systemClock } from '../../shared/clock.ts';
import { arithBenchmark, createSeededRandom } from '../../tasks/index.ts';
import { integerOption, numberOption } from '../cli-options.ts';

type Flags = {
  replicas: number;
  steps: number;
  groupSize: number;
  batchSize: number;
  segmentToolCalls: number;
  segmentTokens?: number;
  maxTokens: number;
  temperature: number;
  sandboxWorkers: number;
  json?: boolean;
};

const positive = integerOption({ min: 1 });

export function registerRolloutBench(bench: Command): void {
  bench
    .command('rollout')
    .description(
      'rollout step time: static sync vs request-level async vs + partial rollout vs + prefix-aware router',
    )
    .option('--replicas <k>', 'embedded replicas', positive, 2)
    .option('--steps <n>', 'steps per configuration', positive, 4)
    .option('--group-size <n>', 'trajectories per problem', positive, 4)
    .option('--batch-size <B>', 'groups kept per step', positive, 4)
    .option('--segment-tool-calls <T>', 'T_seg of the partial-rollout configurations', positive, 1)
    .option(
      '--segment-tokens <L>',
      'L_seg of the partial-rollout configurations (default maxTokens / 2)',
      positive,
    )
    .option('--max-tokens <n>', 'context budget per trajectory (capped at the model context)', positive, 1024)
    .option('--temperature <t>', 'sampling temperature', numberOption({ min: 0 }), 1)
    .option('--sandbox-workers <n>', 'local sandbox pool size', positive, 8)
    .option('--json', 'print the rows as JSON')
    .action(async (flags: Flags) => {
      const rows = await benchRollout(flags);
      if (flags.json === true)
        process.stdout.write(`${JSON.stringify(rows.map(({ steps: _, ...row }) => row))}\n`);
      else process.stdout.write(table(rows));
    });
}

async function benchRollout(flags: Flags): Promise<RolloutBenchRow[]> {
  const model = findEmbeddedModel();
  if (model === null) {
    throw new AgentMathError(
      'NO_ENGINE',
      'bench rollout needs the trained arith model: run `agentmath quickstart` first',
    );
  }
  const count = flags.replicas;
  process.stderr.write(`starting ${count} embedded replica(s) of ${model} …\n`);
  const started = await Promise.all(Array.from({ length: count }, () => startEmbeddedEngine({ model })));
  const sandbox = createLocalSandbox({ maxWorkers: flags.sandboxWorkers, warmWorkers: 2 });
  try {
    const first = started[0] as (typeof started)[number];
    const maxTokens = Math.min(flags.maxTokens, first.contextTokens ?? Number.POSITIVE_INFINITY);
    // Long-tailed: levels 1-4 interleaved, so every batch mixes short and long trajectories.
    const items = arithBenchmark();
    const byLevel = [1, 2, 3, 4].map((level) => items.filter((item) => item.level === level));
    const problems = byLevel[0]!
      .flatMap((_, index) => byLevel.map((level) => level[index]).filter((item) => item !== undefined))
      .map((item) => ({ id: item.id, text: item.problem, answer: item.answer }));
    return await runRolloutBench({
      replicas: started.map((embedded, index) => ({ name: `embedded-${index}`, engine: embedded.engine })),
      tokenizer: first.tokenizer,
      dialect: getDialect('tags'),
      sandbox,
      grade: (trajectory, problem) => gradeTrajectory(trajectory, problem.answer, gradeAnswer),
      prompt: promptBuilders['problem-only'],
      clock: systemClock,
      random: createSeededRandom(0),
      problems,
      steps: flags.steps,
      temperature: flags.temperature,
      config: {
        groupSize: flags.groupSize,
        batchSize: flags.batchSize,
        // No over-provisioning: every configuration does the same work per step, so step times compare.
        overProvision: 0,
        stages: [{ maxTokens, maxToolCalls: 8, partialRollouts: 2 }],
        segmentToolCalls: flags.segmentToolCalls,
        ...(flags.segmentTokens === undefined ? {} : { segmentTokens: flags.segmentTokens }),
        maxPolicyLag: 1000,
      },
      onStep: (name, stats) =>
        process.stderr.write(
          `${name} step ${stats.step}: ${(stats.wallMs / 1000).toFixed(2)} s, ${stats.tokensGenerated} tokens, kept ${stats.groupsKept}, parked ${stats.trajectoriesParked}\n`,
        ),
    });
  } finally {
    await sandbox.close();
    await Promise.all(started.map((embedded) => embedded.close()));
  }
}

function table(rows: readonly RolloutBenchRow[]): string {
  const lines = ['configuration                 step p50 s  step p99 s  tokens/s  speedup vs static-sync'];
  for (const row of rows) {
    lines.push(
      `${row.name.padEnd(28)}  ${(row.stepMsP50 / 1000).toFixed(2).padStart(10)}  ${(row.stepMsP99 / 1000).toFixed(2).padStart(10)}  ${row.tokensPerSecond.toFixed(1).padStart(8)}  ${row.speedup.toFixed(2).padStart(6)}x`,
    );
  }
  return `${lines.join('\n')}\n`;
}
