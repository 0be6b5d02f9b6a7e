/**
 * `agentmath rollout`: rollout steps (request-level async or static sync, partial rollout,
 * adaptive batches, growing budgets) over one or more engine replicas behind the router, with
 * `trajectories.jsonl`, `groups.jsonl` and `steps.jsonl` appended as it goes and `--resume`
 * after a kill. Without `--engine`, `--replicas K` workers of the embedded model are started.
 * This file only wires options to `src/rollout`, `src/engine`, `src/sandbox` and `src/grader`.
 */
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { type PromptBuilderName, promptBuilders, SessionPark } from '../../agent/index.ts';
import { findEmbeddedModel, startEmbeddedEngine } from '../../engine/embedded/index.ts';
import {
  createEngine,
  createRouterPolicy,
  loadTokenizer,
  ROUTER_POLICY_NAMES,
  Router,
  type RouterPolicyName,
} from '../../engine/index.ts';
import type { Tokenizer } from '../../engine/tokenizer.ts';
import type { Engine } from '../../engine/types.ts';
import { BUILTIN_BENCHMARKS, gradeTrajectory, loadBenchmark } from '../../eval/index.ts';
import { gradeAnswer } from '../../grader/index.ts';
import { getDialect } from '../../protocol/index.ts';
import { PAPER_BUDGET_STAGES, rolloutConfigSchema, runRollout, type StepStats } from '../../rollout/index.ts';
import { createLocalSandbox, SandboxClient } from '../../sandbox/index.ts';
import type { SandboxProvider } from '../../sandbox/types.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { systemClock } from '../../shared/clock.ts';
import { createSeededRandom } from '../../tasks/seeded-random.ts';
import { integerOption, numberOption } from '../cli-options.ts';

type RolloutCommandOptions = {
  bench: string;
  dataDir?: string;
  limit?: number;
  engine: string[];
  api: 'sglang' | 'vllm';
  tokenizer?: string;
  replicas: number;
  router: RouterPolicyName;
  mode: 'async' | 'sync';
  groupSize: number;
  batchSize: number;
  steps: number;
  segmentTokens?: number;
  segmentToolCalls?: number;
  partialRollout: boolean;
  maxTokens?: number;
  maxToolCalls?: number;
  partialRollouts?: number;
  maxNewTokens: number;
  maxPolicyLag: number;
  stalePolicy: 'restart' | 'drop';
  overProvision: number;
  kvBudgetTokens?: number;
  tailCut?: number;
  maxInFlight: number;
  temperature: number;
  seed: number;
  sandbox?: string;
  sandboxWorkers: number;
  out?: string;
  resume?: boolean;
  json?: boolean;
};

const integer = (min: number) => integerOption({ min });
const number = numberOption();
const collect = (value: string, previous: string[]) => [...previous, value];

export function registerRollout(program: Command): void {
  program
    .command('rollout')
    .description('run rollout steps (GRPO groups, partial rollout, adaptive batches) over engine replicas')
    .requiredOption('--bench <name|path>', 'benchmark file (.jsonl/.parquet), preset or built-in (arith)')
    .option('--data-dir <dir>', 'folder of named benchmark files')
    .option('--limit <n>', 'only the first n problems', integer(1))
    .option(
      '--engine <url>',
      'an engine replica (repeat for several; default: embedded replicas)',
      collect,
      [],
    )
    .addOption(
      new Option('--api <api>', 'replica API (token level)').choices(['sglang', 'vllm']).default('sglang'),
    )
    .option('--tokenizer <dir>', 'Hugging Face tokenizer folder (with --engine)')
    .option('--replicas <k>', 'embedded replicas to start when no --engine is given', integer(1), 2)
    .addOption(
      new Option('--router <policy>', 'load balancing')
        .choices([...ROUTER_POLICY_NAMES])
        .default('prefix-aware'),
    )
    .addOption(new Option('--mode <mode>', 'scheduling').choices(['async', 'sync']).default('async'))
    .option('--group-size <n>', 'trajectories per problem (GRPO group)', integer(1), 8)
    .option('--batch-size <B>', 'groups kept per step', integer(1), 8)
    .option('--steps <S>', 'rollout steps', integer(1), 2)
    .option(
      '--segment-tokens <L>',
      'L_seg: new tokens per trajectory per step (default maxTokens / N)',
      integer(1),
    )
    .option(
      '--segment-tool-calls <T>',
      'T_seg: tool calls per trajectory per step (default maxToolCalls / N)',
      integer(1),
    )
    .option('--no-partial-rollout', 'run every trajectory to its end within the step')
    .option(
      '--max-tokens <n>',
      'one budget stage: context tokens (default: the paper stages 48k→72k→96k)',
      integer(1),
    )
    .option('--max-tool-calls <n>', 'one budget stage: tool calls (default 48→72→96)', integer(0))
    .option('--partial-rollouts <N>', 'one budget stage: partial rollouts N (default 2→3→4)', integer(1))
    .option('--max-new-tokens <n>', 'tokens per engine call', integer(1), 4096)
    .option('--max-policy-lag <n>', 'staleness bound in policy versions', integer(0), 1)
    .addOption(
      new Option('--stale-policy <policy>', 'what a stale trajectory gets')
        .choices(['restart', 'drop'])
        .default('restart'),
    )
    .option('--over-provision <n>', 'extra groups in flight beyond the batch (async)', integer(0), 2)
    .option(
      '--kv-budget-tokens <n>',
      "KV-capacity-aware admission: the replicas' total KV in tokens (async; default off)",
      integer(1),
    )
    .option(
      '--tail-cut <f>',
      'with --kv-budget-tokens: end a step once the KV held falls below f of its peak (0 < f < 1)',
      number,
    )
    .option('--max-in-flight <n>', 'requests in flight per replica', integer(1), 32)
    .option('--temperature <t>', 'sampling temperature', number, 1)
    .option('--seed <s>', "seed of ids and of every trajectory's sampling", integer(0), 0)
    .option('--sandbox <url>', 'sandbox node URL (default: a local pool of jailed workers)')
    .option('--sandbox-workers <n>', 'local pool size', integer(1), 8)
    .option('--out <dir>', 'output folder (default: runs/rollout-<bench>-<time>)')
    .option('--resume', 'continue the run in --out after a stop or a kill')
    .option('--json', 'print the step statistics as JSON on stdout')
    .action(async (options: RolloutCommandOptions) => {
      process.exitCode = await rolloutCommand(options);
    });
}

type Replicas = {
  replicas: { name: string; engine: Engine }[];
  tokenizer: Tokenizer;
  contextTokens: number | null;
  model: string | null;
  close: () => Promise<void>;
};

async function startReplicas(options: RolloutCommandOptions): Promise<Replicas> {
  if (options.engine.length > 0) {
    if (options.tokenizer === undefined) {
      throw new AgentMathError(
        'CLI_BAD_OPTION',
        `--api ${options.api} works on token ids: pass --tokenizer DIR`,
      );
    }
    const tokenizer = await loadTokenizer(options.tokenizer);
    const engines = options.engine.map((url) => ({
      name: url,
      engine: createEngine({ api: options.api, url }),
    }));
    return {
      replicas: engines,
      tokenizer,
      contextTokens: null,
      model: null,
      close: async () => {
        for (const { engine } of engines) engine.close();
      },
    };
  }
  const model = findEmbeddedModel();
  if (model === null) {
    throw new AgentMathError(
      'NO_ENGINE',
      'no engine: pass --engine URL (repeat for replicas) with --tokenizer DIR, or train the embedded model first (`agentmath quickstart`)',
    );
  }
  process.stderr.write(`starting ${options.replicas} embedded replica(s) of ${model} …\n`);
  const started = await Promise.all(
    Array.from({ length: options.replicas }, () =>
      startEmbeddedEngine({
        model,
        onLog: (line, stream) => {
          if (stream === 'stderr' && /error|traceback/i.test(line)) process.stderr.write(`worker: ${line}\n`);
        },
      }),
    ),
  );
  return {
    replicas: started.map((embedded, index) => ({ name: `embedded-${index}`, engine: embedded.engine })),
    tokenizer: (started[0] as (typeof started)[number]).tokenizer,
    contextTokens: (started[0] as (typeof started)[number]).contextTokens,
    model,
    close: async () => {
      await Promise.all(started.map((embedded) => embedded.close()));
    },
  };
}

async function rolloutCommand(options: RolloutCommandOptions): Promise<number> {
  if (options.mode === 'sync' && (options.kvBudgetTokens !== undefined || options.tailCut !== undefined))
    throw new Error(
      '--kv-budget-tokens and --tail-cut apply to --mode async (a synchronous round admits all at once)',
    );
  if (options.tailCut !== undefined) {
    if (!(options.tailCut > 0 && options.tailCut < 1))
      throw new Error(`--tail-cut must be a fraction between 0 and 1 (got ${options.tailCut})`);
    if (options.kvBudgetTokens === undefined)
      throw new Error('--tail-cut needs --kv-budget-tokens (the cut watches the KV the budget holds)');
  }
  const benchmark = await loadBenchmark(options.bench, {
    dataDir: options.dataDir,
    builtins: BUILTIN_BENCHMARKS,
  });
  const problems = (
    options.limit === undefined ? benchmark.problems : benchmark.problems.slice(0, options.limit)
  ).map((problem) => ({ id: problem.id, text: problem.problem, answer: problem.answer }));
  const outDir = resolve(
    options.out ??
      `runs/rollout-${benchmark.name}-${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}`,
  );
  const target = await startReplicas(options);
  const cap = (tokens: number) =>
    target.contextTokens === null ? tokens : Math.min(tokens, target.contextTokens);
  const single =
    options.maxTokens !== undefined ||
    options.maxToolCalls !== undefined ||
    options.partialRollouts !== undefined;
  const stages = single
    ? [
        {
          maxTokens: cap(options.maxTokens ?? PAPER_BUDGET_STAGES[0].maxTokens),
          maxToolCalls: options.maxToolCalls ?? PAPER_BUDGET_STAGES[0].maxToolCalls,
          partialRollouts: options.partialRollouts ?? PAPER_BUDGET_STAGES[0].partialRollouts,
        },
      ]
    : PAPER_BUDGET_STAGES.map((stage) => ({ ...stage, maxTokens: cap(stage.maxTokens) }));
  const config = rolloutConfigSchema.parse({
    groupSize: options.groupSize,
    batchSize: options.batchSize,
    mode: options.mode,
    stages,
    partialRollout: options.partialRollout,
    ...(options.segmentTokens === undefined ? {} : { segmentTokens: options.segmentTokens }),
    ...(options.segmentToolCalls === undefined ? {} : { segmentToolCalls: options.segmentToolCalls }),
    maxNewTokensPerTurn: options.maxNewTokens,
    maxPolicyLag: options.maxPolicyLag,
    stalePolicy: options.stalePolicy,
    overProvision: options.overProvision,
    kvBudgetTokens: options.kvBudgetTokens ?? null,
    tailCut: options.tailCut ?? null,
  });
  const promptName: PromptBuilderName = target.model === null ? 'instructed' : 'problem-only';
  const agent = { sampling: { temperature: options.temperature, topP: 1, seed: options.seed } };
  const definingConfig = {
    command: 'rollout',
    benchmarkSource: benchmark.source,
    limit: options.limit ?? null,
    replicas: target.model === null ? options.engine : { model: target.model, count: options.replicas },
    router: options.router,
    prompt: promptName,
    rollout: config,
    agent,
    seed: options.seed,
  };
  const sandbox: SandboxProvider =
    options.sandbox === undefined
      ? createLocalSandbox({
          maxWorkers: options.sandboxWorkers,
          warmWorkers: Math.min(2, options.sandboxWorkers),
        })
      : new SandboxClient({ url: options.sandbox });
  const router = new Router({
    replicas: target.replicas,
    policy: createRouterPolicy(options.router),
    clock: systemClock,
    maxInFlightPerReplica: options.maxInFlight,
  });
  const park = new SessionPark();
  const interrupt = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    process.stderr.write(`\n${signal}: stopping; resume with --resume --out ${outDir}\n`);
    interrupt.abort(new Error(signal));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.stderr.write(
    `rollout ${benchmark.name}: ${options.steps} step(s), B=${config.batchSize} × n=${config.groupSize}, ${config.mode}, ${options.router} → ${outDir}\n`,
  );
  let finished = 0;
  try {
    const result = await runRollout({
      folder: outDir,
      resume: options.resume === true,
      definingConfig,
      steps: options.steps,
      problems,
      config,
      agent,
      parts: {
        engine: router,
        routerName: options.router,
        tokenizer: target.tokenizer,
        dialect: getDialect('tags'),
        sandbox,
        park,
        grade: (trajectory, problem) => gradeTrajectory(trajectory, problem.answer, gradeAnswer, { sandbox }),
        clock: systemClock,
        random: createSeededRandom(options.seed),
        prompt: promptBuilders[promptName],
        signal: interrupt.signal,
      },
      onEvent: (event) => {
        if (event.type !== 'trajectory-finish') return;
        finished++;
        if (finished % 8 === 0)
          process.stderr.write(`  step ${event.step}: ${finished} trajectories finished\n`);
      },
      onStep: (stats) => {
        process.stderr.write(
          `step ${stats.step}: ${(stats.wallMs / 1000).toFixed(1)} s, kept ${stats.groupsKept}, dropped ${stats.groupsDropped}, ` +
            `finished ${stats.trajectoriesFinished}, parked ${stats.trajectoriesParked}, resumed ${stats.trajectoriesResumed}` +
            `${stats.tailCut ? ', ended by the tail cut' : ''}\n`,
        );
      },
    });
    if (result.resumedFrom > 0) process.stderr.write(`resumed from step ${result.resumedFrom}\n`);
    if (options.json === true)
      process.stdout.write(`${JSON.stringify({ out: outDir, steps: result.steps })}\n`);
    else process.stdout.write(`${summaryTable(result.steps)}results in ${outDir}\n`);
    return interrupt.signal.aborted ? 130 : 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await park.closeAll().catch(() => {});
    await target.close();
    await sandbox.close();
  }
}

function summaryTable(steps: readonly StepStats[]): string {
  const header = [
    'step',
    'wall s',
    'finished',
    'parked',
    'resumed',
    'kept',
    'dropped',
    'trunc %',
    'tokens',
    'tool calls',
    'stage',
  ];
  const rows = steps.map((stats) => [
    String(stats.step),
    (stats.wallMs / 1000).toFixed(1),
    String(stats.trajectoriesFinished),
    String(stats.trajectoriesParked),
    String(stats.trajectoriesResumed),
    String(stats.groupsKept),
    String(stats.groupsDropped),
    (100 * stats.truncationRate).toFixed(1),
    String(stats.tokensGenerated),
    String(stats.toolCalls),
    String(stats.stage),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]) =>
    `${cells.map((cell, column) => cell.padStart(widths[column] ?? 0)).join('  ')}\n`;
  return line(header) + rows.map(line).join('');
}
