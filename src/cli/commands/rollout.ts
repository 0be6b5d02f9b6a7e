/**
 * `agentmath rollout`: rollout steps (request-level async or static sync, partial rollout,
 * adaptive batches, growing budgets) over one or more engine replicas behind the router, with
 * `trajectories.jsonl`, `groups.jsonl` and `steps.jsonl` appended as it goes and `--resume`
 * after a kill. Without `--engine`, `--replicas K` workers of the embedded model are started.
 * This file only wires options to `src/rollout`, `src/engine`, `src/sandbox` and `src/grader`.
 */
import { join, resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { type PromptBuilderName, promptBuilders, SessionPark } from '../../agent/index.ts';
import {
  createEngine,
  createRouterPolicy,
  loadTokenizer,
  ROUTER_POLICY_NAMES,
  Router,
  type RouterPolicyName,
} from '../../engine/index.ts';
import { modelContextLength } from '../../engine/local/embedded-engine.ts';
import { startEmbeddedEngine } from '../../engine/local/index.ts';
import type { Tokenizer } from '../../engine/tokenizer.ts';
import type { Engine } from '../../engine/types.ts';
import { BUILTIN_BENCHMARKS, gradeTrajectory, loadBenchmark } from '../../eval/index.ts';
import { gradeAnswer } from '../../grader/index.ts';
import { findEmbeddedModel } from '../../model/index.ts';
import { getDialect } from '../../protocol/index.ts';
import {
  assertRunIdentity,
  PAPER_BUDGET_STAGES,
  ROLLOUT_FILES,
  type RolloutRunConfig,
  rolloutConfigSchema,
  runRollout,
  type StepStats,
} from '../../rollout/index.ts';
import { createLocalSandbox, SandboxClient } from '../../sandbox/index.ts';
import type { SandboxProvider } from '../../sandbox/types.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { systemClock } from '../../shared/clock.ts';
import { assertNotAFile, checkRunFolder } from '../../shared/run-folder-check.ts';
import { acquireRunFolderLock } from '../../shared/run-folder-lock.ts';
import { createSeededRandom } from '../../tasks/seeded-random.ts';
import {
  collectHttpUrls,
  existingFolderOption,
  integerOption,
  numberOption,
  usageError,
} from '../cli-options.ts';
import { holdSignals, interruptSignal, onShutdown } from '../process-lifecycle.ts';
import { addEngineTimeoutOption } from './engine-target.ts';

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
  engineTimeoutMs: number;
  seed: number;
  sandbox?: string;
  sandboxWorkers: number;
  out?: string;
  resume?: boolean;
  json?: boolean;
};

const integer = (min: number) => integerOption({ min });
const number = numberOption();

export function registerRollout(program: Command): void {
  const command = program
    .command('rollout')
    .description('run rollout steps (GRPO groups, partial rollout, adaptive batches) over engine replicas')
    .requiredOption('--bench <name|path>', 'benchmark file (.jsonl/.parquet), preset or built-in (arith)')
    .option('--data-dir <dir>', 'folder of named benchmark files')
    .option('--limit <n>', 'only the first n problems', integer(1))
    .option(
      '--engine <url...>',
      'engine replicas: --engine URL URL … or --engine URL repeated (default: embedded replicas)',
      collectHttpUrls,
      [],
    )
    .addOption(
      new Option('--api <api>', 'replica API (token level)').choices(['sglang', 'vllm']).default('sglang'),
    )
    .option('--tokenizer <dir>', 'Hugging Face tokenizer folder (with --engine)', existingFolderOption)
    .option('--replicas <k>', 'embedded replicas to start when no --engine is given', integer(1), 2)
    .addOption(
      new Option('--router <policy>', 'load balancing')
        .choices([...ROUTER_POLICY_NAMES])
        .default('prefix-aware'),
    )
    .addOption(new Option('--mode <mode>', 'scheduling').choices(['async', 'sync']).default('async'))
    .option(
      '--group-size <n>',
      'trajectories per problem (GRPO group; at least 2, or no group carries a signal)',
      integer(2),
      8,
    )
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
    .option('--temperature <t>', 'sampling temperature', numberOption({ min: 0, max: 100 }), 1)
    .option('--seed <s>', "seed of ids and of every trajectory's sampling", integer(0), 0)
    .option('--sandbox <url>', 'sandbox node URL (default: a local pool of jailed workers)')
    .option('--sandbox-workers <n>', 'local pool size', integer(1), 8)
    .option('--out <dir>', 'output folder (default: runs/rollout-<bench>-<time>)')
    .option('--resume', 'continue the run in --out after a stop or a kill')
    .option('--json', 'print the step statistics as JSON on stdout');
  addEngineTimeoutOption(command).action(async (options: RolloutCommandOptions) => {
    process.exitCode = await rolloutCommand(options);
  });
}

type Replicas = {
  replicas: { name: string; engine: Engine }[];
  tokenizer: Tokenizer;
  close: () => Promise<void>;
};

/** The engines to roll out on, found without starting anything: URLs, or the embedded model. */
type ReplicaPlan =
  | { kind: 'urls'; urls: string[]; tokenizer: string }
  | { kind: 'embedded'; model: string; contextTokens: number | null };

function planReplicas(options: RolloutCommandOptions): ReplicaPlan {
  if (options.engine.length > 0) {
    if (options.tokenizer === undefined)
      throw usageError(`--api ${options.api} works on token ids: pass --tokenizer DIR`);
    return { kind: 'urls', urls: options.engine, tokenizer: options.tokenizer };
  }
  const model = findEmbeddedModel();
  if (model === null) {
    throw new AgentMathError(
      'NO_ENGINE',
      'no engine: pass --engine URL (repeat for replicas) with --tokenizer DIR, or train the embedded model first (`agentmath quickstart`)',
    );
  }
  return { kind: 'embedded', model, contextTokens: modelContextLength(model) };
}

async function startReplicas(plan: ReplicaPlan, options: RolloutCommandOptions): Promise<Replicas> {
  if (plan.kind === 'urls') {
    const tokenizer = await loadTokenizer(plan.tokenizer);
    const engines = plan.urls.map((url) => ({
      name: url,
      engine: createEngine({ api: options.api, url, timeoutMs: options.engineTimeoutMs }),
    }));
    return {
      replicas: engines,
      tokenizer,
      close: async () => {
        for (const { engine } of engines) engine.close();
      },
    };
  }
  process.stderr.write(`starting ${options.replicas} embedded replica(s) of ${plan.model} …\n`);
  const started: Awaited<ReturnType<typeof startEmbeddedEngine>>[] = [];
  // Registered before the workers exist, so a signal while they start stops those started.
  const close = async () => {
    await Promise.all(started.map((embedded) => embedded.close()));
  };
  const unregister = onShutdown(close);
  const starting = Array.from({ length: options.replicas }, async () => {
    const embedded = await startEmbeddedEngine({
      model: plan.model,
      timeoutMs: options.engineTimeoutMs,
      onLog: (line, stream) => {
        if (stream === 'stderr' && /error|traceback/i.test(line)) process.stderr.write(`worker: ${line}\n`);
      },
    });
    started.push(embedded);
    return embedded;
  });
  const results = await Promise.allSettled(starting);
  const failed = results.find((result) => result.status === 'rejected');
  if (failed !== undefined) {
    await close();
    unregister();
    throw failed.reason;
  }
  const first = started[0] as (typeof started)[number];
  return {
    replicas: started.map((embedded, index) => ({ name: `embedded-${index}`, engine: embedded.engine })),
    tokenizer: first.tokenizer,
    close: async () => {
      await close();
      unregister();
    },
  };
}

/** Every check of the command line that needs no file read and starts nothing. */
function checkOptions(options: RolloutCommandOptions): void {
  if (options.mode === 'sync' && (options.kvBudgetTokens !== undefined || options.tailCut !== undefined))
    throw usageError(
      '--kv-budget-tokens and --tail-cut apply to --mode async (a synchronous round admits all at once)',
    );
  if (options.tailCut !== undefined) {
    if (!(options.tailCut > 0 && options.tailCut < 1))
      throw usageError(`--tail-cut must be a fraction between 0 and 1 (got ${options.tailCut})`);
    if (options.kvBudgetTokens === undefined)
      throw usageError('--tail-cut needs --kv-budget-tokens (the cut watches the KV the budget holds)');
  }
  if (options.resume === true && options.out === undefined)
    throw usageError('--resume needs --out DIR (the run to continue)');
  if (options.out !== undefined) assertNotAFile(resolve(options.out));
}

async function rolloutCommand(options: RolloutCommandOptions): Promise<number> {
  checkOptions(options);
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
  const plan = planReplicas(options);
  const contextTokens = plan.kind === 'embedded' ? plan.contextTokens : null;
  const cap = (tokens: number) => (contextTokens === null ? tokens : Math.min(tokens, contextTokens));
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
  const parsedConfig = rolloutConfigSchema.safeParse({
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
  if (!parsedConfig.success) {
    const issue = parsedConfig.error.issues[0];
    throw usageError(`rollout configuration: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`);
  }
  const config = parsedConfig.data;
  const promptName: PromptBuilderName = plan.kind === 'urls' ? 'instructed' : 'problem-only';
  const agent = { sampling: { temperature: options.temperature, topP: 1, seed: options.seed } };
  const definingConfig: RolloutRunConfig = {
    command: 'rollout',
    benchmarkSource: benchmark.source,
    limit: options.limit ?? null,
    replicas: plan.kind === 'urls' ? plan.urls : { model: plan.model, count: options.replicas },
    router: options.router,
    prompt: promptName,
    rollout: config,
    agent,
    seed: options.seed,
  };
  // The folder, the run identity and the lock, before any process starts or any file is written.
  checkRunFolder({
    folder: outDir,
    marker: ROLLOUT_FILES.config,
    resume: options.resume === true,
    command: 'rollout',
  });
  await assertRunIdentity(outDir, definingConfig, options.resume === true);
  const releaseLock = await acquireRunFolderLock(outDir, { command: 'rollout' });
  const release = holdSignals();
  const interrupt = interruptSignal();
  const unregisterLock = onShutdown(releaseLock);
  let target: Replicas | null = null;
  let sandbox: SandboxProvider | null = null;
  const park = new SessionPark();
  try {
    target = await startReplicas(plan, options);
    const openSandbox: SandboxProvider =
      options.sandbox === undefined
        ? createLocalSandbox({
            maxWorkers: options.sandboxWorkers,
            warmWorkers: Math.min(2, options.sandboxWorkers),
          })
        : new SandboxClient({ url: options.sandbox });
    sandbox = openSandbox;
    const unregisterSandbox = onShutdown(async () => {
      await park.closeAll().catch(() => {});
      await openSandbox.close();
    });
    const router = new Router({
      replicas: target.replicas,
      policy: createRouterPolicy(options.router),
      clock: systemClock,
      maxInFlightPerReplica: options.maxInFlight,
    });
    process.stderr.write(
      `rollout ${benchmark.name}: ${options.steps} step(s), B=${config.batchSize} × n=${config.groupSize}, ${config.mode}, ${options.router} → ${outDir}\n`,
    );
    let finished = 0;
    const errors = new Map<string, number>();
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
        sandbox: openSandbox,
        park,
        grade: (trajectory, problem) =>
          gradeTrajectory(trajectory, problem.answer, gradeAnswer, { sandbox: openSandbox }),
        clock: systemClock,
        random: createSeededRandom(options.seed),
        prompt: promptBuilders[promptName],
        signal: interrupt,
      },
      onEvent: (event) => {
        if (event.type !== 'trajectory-finish') return;
        finished++;
        const error = event.trajectory.finish?.error;
        if (event.trajectory.finish?.reason === 'error' && error !== undefined && !interrupt.aborted) {
          const cause = `[${error.code}] ${error.message}`;
          errors.set(cause, (errors.get(cause) ?? 0) + 1);
        }
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
    unregisterSandbox();
    if (interrupt.aborted) {
      process.stderr.write(`stopped by ${String(interrupt.reason)}; resume with --resume --out ${outDir}\n`);
      return 1; // the signal is re-raised by main.ts: the status is 128+N
    }
    if (result.resumedFrom > 0) process.stderr.write(`resumed from step ${result.resumedFrom}\n`);
    if (options.json === true)
      process.stdout.write(`${JSON.stringify({ out: outDir, steps: result.steps })}\n`);
    else process.stdout.write(`${summaryTable(result.steps)}results in ${outDir}\n`);
    if (errors.size > 0) {
      const count = [...errors.values()].reduce((total, value) => total + value, 0);
      const causes = [...errors.entries()]
        .sort((left, right) => right[1] - left[1])
        .slice(0, 5)
        .map(([cause, times]) => `  ${times} × ${cause}`);
      process.stderr.write(
        `${count} of ${finished} trajectories ended in an engine or sandbox error (see ${join(outDir, ROLLOUT_FILES.trajectories)}):\n${causes.join('\n')}\n`,
      );
      return 1;
    }
    return 0;
  } finally {
    await park.closeAll().catch(() => {});
    if (target !== null) await target.close();
    if (sandbox !== null) await sandbox.close();
    unregisterLock();
    await releaseLock();
    release();
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
