/**
 * `agentmath eval`: runs the agent on a benchmark with k samples per problem, grades every
 * trajectory, and writes config.json, trajectories.jsonl and summary.json to the output
 * folder (resumable). This file only wires options to `src/eval`, `src/agent`, `src/engine`,
 * `src/sandbox` and `src/grader`.
 */
import { join, resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import {
  type AgentOptions,
  agentConfigSchema,
  type PromptBuilderName,
  promptBuilders,
  runAgent,
} from '../../agent/index.ts';
import { modelContextLength } from '../../engine/local/index.ts';
import {
  BUILTIN_BENCHMARKS,
  createProgressReporter,
  type EvalCommandConfig,
  type EvalRunnerConfig,
  type FieldMapping,
  gradeTrajectory,
  loadBenchmark,
  RUN_FILES,
  readRunJson,
  runEval,
} from '../../eval/index.ts';
import {
  answersEquivalent,
  GRADER_NAMES,
  type GraderName,
  graderFor,
  releaseSymbolicSessions,
} from '../../grader/index.ts';
import { getDialect } from '../../protocol/index.ts';
import { createLocalSandbox, SandboxClient } from '../../sandbox/index.ts';
import type { SandboxProvider } from '../../sandbox/types.ts';
import { checkRunFolder } from '../../shared/run-folder-check.ts';
import { acquireRunFolderLock } from '../../shared/run-folder-lock.ts';
import { assertSameRun, type IdentityValue, type RunIdentity } from '../../shared/run-identity.ts';
import { type AgentFlags, addAgentFlags } from '../agent-flags.ts';
import {
  collectHttpUrls,
  existingFolderOption,
  integerOption,
  SANDBOX_PRELOAD_HELP,
  sandboxPreloadOption,
} from '../cli-options.ts';
import { holdSignals, interruptSignal, onShutdown } from '../process-lifecycle.ts';
import { resumeCommand } from '../resume-command.ts';
import { API_KEY_HELP, API_KEY_VARIABLES, withoutApiKey } from './api-key.ts';
import { locateEmbeddedModel, resolveEngineTarget } from './engine-target.ts';

type EvalCommandOptions = AgentFlags & {
  bench: string;
  dataDir?: string;
  fields?: FieldMapping;
  limit?: number;
  samples: number;
  concurrency: number;
  out?: string;
  resume?: boolean;
  engine?: string[];
  api: 'sglang' | 'vllm' | 'openai' | 'openai-chat';
  model?: string;
  apiKey?: string;
  tokenizer?: string;
  dialect: 'tags' | 'markdown';
  prompt?: PromptBuilderName;
  sandbox?: string;
  sandboxWorkers?: number;
  sandboxPreload?: string[];
  grader: GraderName;
};

/** `problem=q,answer=gold,id=uid` → a field mapping. */
function fieldMapping(value: string): FieldMapping {
  const mapping: FieldMapping = {};
  for (const pair of value.split(',')) {
    const [role, column] = pair.split('=').map((part) => part.trim());
    if ((role !== 'problem' && role !== 'answer' && role !== 'id') || !column) {
      throw new InvalidArgumentError(
        `expected role=column pairs with role problem, answer or id, got "${pair}"`,
      );
    }
    mapping[role] = column;
  }
  return mapping;
}

export function registerEval(program: Command): void {
  const command = program
    .command('eval')
    .description(
      'evaluate a model on a benchmark: k graded samples per problem, metrics in the output folder',
    )
    .requiredOption(
      '--bench <name|path>',
      'benchmark file (.jsonl/.parquet; - reads JSONL from standard input), preset (aime24, …) or built-in (arith)',
    )
    .option(
      '--data-dir <dir>',
      'folder of named benchmark files (default: AGENTMATH_DATA_DIR, then ../shared/data/benchmarks)',
    )
    .option('--fields <mapping>', 'column names, e.g. problem=question,answer=solution,id=uid', fieldMapping)
    .option('--limit <n>', 'only the first n problems', integerOption({ min: 1 }))
    .option('-k, --samples <n>', 'samples per problem', integerOption({ min: 1, max: MAX_SAMPLES }), 1)
    .option('--concurrency <n>', 'trajectories in flight at once', integerOption({ min: 1, max: 4096 }), 8)
    .option('--out <dir>', 'output folder (default: runs/eval-<bench>-<time>)')
    .option('--resume', 'continue the run in --out, skipping finished (problem, sample) pairs')
    .option(
      '--engine <url...>',
      'inference server base URL; several (--engine URL URL … or --engine repeated) share the requests through a prefix-aware router (default: the embedded model under .agentmath/models/)',
      collectHttpUrls,
    )
    .addOption(
      new Option('--api <api>', 'server API')
        .choices(['sglang', 'vllm', 'openai', 'openai-chat'])
        .default('sglang'),
    )
    .option('--model <name>', 'served model name (required for openai and openai-chat)')
    .option('--api-key <key>', API_KEY_HELP)
    .option(
      '--tokenizer <dir>',
      'Hugging Face tokenizer folder (token-level engines: sglang, vllm)',
      existingFolderOption,
    )
    .addOption(
      new Option('--dialect <name>', 'code-block markup').choices(['tags', 'markdown']).default('tags'),
    )
    .addOption(
      new Option(
        '--prompt <builder>',
        'how a problem becomes messages (default: instructed; problem-only for the embedded model)',
      ).choices(Object.keys(promptBuilders)),
    );
  addAgentFlags(command, 'sample i of every problem uses seed s + i')
    .option('--sandbox <url>', 'sandbox node URL (default: a local pool of jailed workers)')
    .option(
      '--sandbox-workers <n>',
      'local pool size (default: the concurrency)',
      integerOption({ min: 1, max: 4096 }),
    )
    .option('--sandbox-preload <modules>', SANDBOX_PRELOAD_HELP, sandboxPreloadOption)
    .addOption(
      new Option('--grader <name>', "who grades: ours, or math-verify (run in the sandbox's jail)")
        .choices(GRADER_NAMES)
        .default('ours'),
    )
    .action(async (options: EvalCommandOptions) => {
      process.exitCode = await evalCommand(options);
    });
}

/** Samples per problem at most: beyond it, one run's bookkeeping would not fit in memory. */
const MAX_SAMPLES = 65_536;

/**
 * The fields of a run's config.json that define its results (see src/shared/run-identity.ts),
 * with the agent's defaults filled in, so that a run saved before a default was written out
 * compares equal. Concurrency, timeouts, the output folder and the sandbox's location are not part of it.
 */
function evalIdentity(config: Record<string, unknown>): RunIdentity {
  const agent = (config.agent ?? {}) as { budgets?: object; sampling?: object; tool?: object };
  const resolved = agentConfigSchema.parse({
    budgets: agent.budgets ?? {},
    sampling: agent.sampling ?? {},
    tool: agent.tool ?? {},
  });
  const engine = (config.engine ?? {}) as Record<string, IdentityValue>;
  return {
    benchmark: (config.benchmark ?? null) as IdentityValue,
    benchmarkSource: (config.benchmarkSource ?? null) as IdentityValue,
    limit: (config.limit ?? null) as IdentityValue,
    k: (config.k ?? null) as IdentityValue,
    engine: { api: engine.api ?? null, url: engine.url ?? null, model: engine.model ?? null },
    tokenizer: (config.tokenizer ?? null) as IdentityValue,
    dialect: (config.dialect ?? null) as IdentityValue,
    prompt: (config.prompt ?? null) as IdentityValue,
    budgets: {
      maxTotalTokens: resolved.budgets.maxTotalTokens,
      maxToolCalls: resolved.budgets.maxToolCalls,
      maxNewTokensPerTurn: resolved.budgets.maxNewTokensPerTurn,
    },
    sampling: { temperature: resolved.sampling.temperature, topP: resolved.sampling.topP },
    seed: (config.seed ?? null) as IdentityValue,
    toolTimeoutMs: resolved.tool.timeoutMs,
    // Runs saved before the option existed were graded by ours.
    grader: (config.grader ?? 'ours') as IdentityValue,
  };
}

/** Refuses an --out that is a file, holds other files, a run without --resume or no run with it, or a resume that changes the run. */
async function checkOutFolder(
  outDir: string,
  resume: boolean,
  current: Record<string, unknown>,
): Promise<void> {
  // The shared rule (exit 2, RUN_FOLDER_REFUSED): a file, another job's files, a run without
  // --resume, --resume without a run.
  if (!checkRunFolder({ folder: outDir, marker: RUN_FILES.config, resume, command: 'eval' })) return;
  const saved = (await readRunJson(outDir, RUN_FILES.config)) as Record<string, unknown> | null;
  if (saved === null) return;
  assertSameRun({
    run: outDir,
    saved: (saved.identity as RunIdentity | undefined) ?? evalIdentity(saved),
    current: evalIdentity(current),
    fresh: 'start a new run with another --out (without --resume)',
  });
}

async function evalCommand(options: EvalCommandOptions): Promise<number> {
  const benchmark = await loadBenchmark(options.bench, {
    dataDir: options.dataDir,
    builtins: BUILTIN_BENCHMARKS,
    ...(options.fields === undefined ? {} : { fields: options.fields }),
  });
  const problems =
    options.limit === undefined ? benchmark.problems : benchmark.problems.slice(0, options.limit);
  const outDir = resolve(
    options.out ??
      `runs/eval-${benchmark.name}-${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}`,
  );
  // Everything that defines the run is known before any engine or sandbox starts.
  const embeddedModel = options.engine === undefined ? locateEmbeddedModel() : null;
  const contextTokens = embeddedModel === null ? null : modelContextLength(embeddedModel);
  const promptName: PromptBuilderName =
    options.prompt ?? (embeddedModel !== null ? 'problem-only' : 'instructed');
  // The embedded model cannot read past its context length.
  const maxTokens = contextTokens === null ? options.maxTokens : Math.min(options.maxTokens, contextTokens);
  const agentConfig = {
    budgets: {
      maxTotalTokens: maxTokens,
      maxToolCalls: options.maxToolCalls,
      maxNewTokensPerTurn: options.maxNewTokens,
    },
    sampling: { temperature: options.temperature, topP: options.topP },
    tool: { timeoutMs: options.toolTimeoutMs },
  };
  const config = {
    command: 'eval',
    benchmarkSource: benchmark.source,
    limit: options.limit ?? null,
    engine:
      embeddedModel !== null
        ? { api: 'sglang', url: 'embedded', model: embeddedModel }
        : {
            api: options.api,
            // One URL as it always was recorded; several as their list.
            url:
              options.engine === undefined
                ? null
                : options.engine.length === 1
                  ? (options.engine[0] ?? null)
                  : options.engine,
            model: options.model ?? null,
          },
    tokenizer:
      embeddedModel !== null
        ? embeddedModel
        : options.tokenizer === undefined
          ? null
          : resolve(options.tokenizer),
    dialect: options.dialect,
    prompt: promptName,
    agent: agentConfig,
    seed: options.seed ?? null,
    sandbox: options.sandbox ?? 'local',
    grader: options.grader,
  } satisfies Omit<EvalCommandConfig, 'engine' | 'identity' | keyof EvalRunnerConfig> & {
    engine: Omit<EvalCommandConfig['engine'], 'name'>;
  };
  const identity = evalIdentity({ ...config, benchmark: benchmark.name, k: options.samples });
  await checkOutFolder(outDir, options.resume === true, {
    ...config,
    benchmark: benchmark.name,
    k: options.samples,
  });
  // One writer per run folder: a second eval (or a --resume) on it while this one runs is refused.
  const releaseLock = await acquireRunFolderLock(outDir, { command: 'eval' });
  const unregisterLock = onShutdown(releaseLock);

  const target = await resolveEngineTarget(options);
  const { engine, tokenizer } = target;
  const grader = graderFor(options.grader);
  const sandbox: SandboxProvider =
    options.sandbox === undefined
      ? createLocalSandbox({
          maxWorkers: options.sandboxWorkers ?? options.concurrency,
          warmWorkers: Math.min(2, options.sandboxWorkers ?? options.concurrency),
          ...(options.sandboxPreload === undefined ? {} : { preload: options.sandboxPreload }),
        })
      : new SandboxClient({ url: options.sandbox });
  // Math-Verify on a local pool gets a pool of its own, so its warm sessions never hold the
  // workers that the agents' code cells wait for.
  const gradingSandbox: SandboxProvider =
    options.grader === 'math-verify' && options.sandbox === undefined
      ? createLocalSandbox({ maxWorkers: 2, warmWorkers: 0 })
      : sandbox;
  const unregisterSandbox = onShutdown(async () => {
    await sandbox.close();
    if (gradingSandbox !== sandbox) await gradingSandbox.close();
  });
  const dialect = getDialect(options.dialect);
  // A served model reads no further than its context: prompt + new tokens kept within it.
  const servedContext = target.contextTokens;
  const budgets =
    servedContext === null || servedContext >= agentConfig.budgets.maxTotalTokens
      ? agentConfig.budgets
      : { ...agentConfig.budgets, maxTotalTokens: servedContext };
  const agentOptions: AgentOptions = {
    ...agentConfig,
    budgets,
    engineTimeoutMs: options.engineTimeoutMs,
    engine,
    tokenizer,
    sandbox,
    dialect,
    prompt: promptBuilders[promptName],
  };
  // The first TERM/INT/HUP stops the run gracefully (in-flight trajectories are dropped and
  // redone on resume); a second one ends the process at once, children included.
  const release = holdSignals();
  const interrupt = interruptSignal();
  const onInterrupt = () =>
    process.stderr.write(
      `\n${String(interrupt.reason)}: stopping; in-flight trajectories are dropped (Ctrl-C again to quit now)\n`,
    );
  interrupt.addEventListener('abort', onInterrupt, { once: true });
  const reporter = createProgressReporter({ stream: process.stderr, isTTY: process.stderr.isTTY === true });
  process.stderr.write(
    `eval ${benchmark.name}: ${problems.length} problems × ${options.samples} → ${outDir}\n`,
  );
  try {
    const result = await runEval({
      benchmark: { name: benchmark.name, problems },
      k: options.samples,
      concurrency: options.concurrency,
      outDir,
      resume: options.resume === true,
      config: {
        ...config,
        engine: { ...config.engine, name: engine.name },
        identity,
      } satisfies Omit<EvalCommandConfig, keyof EvalRunnerConfig>,
      signal: interrupt,
      onProgress: (progress) => reporter.update(progress),
      solve: (problem, sample, signal) =>
        runAgent(
          { id: problem.id, text: problem.problem },
          {
            ...agentOptions,
            sample,
            signal,
            sampling: {
              ...agentConfig.sampling,
              ...(options.seed === undefined ? {} : { seed: options.seed + sample }),
            },
          },
        ),
      grade: (trajectory, problem) =>
        gradeTrajectory(trajectory, problem.answer, grader, { sandbox: gradingSandbox }),
      equivalent: (left, right) => answersEquivalent(left, right, { sandbox }),
    });
    reporter.finish();
    const { summary } = result;
    // With nothing graded there is no accuracy: a dash, not 0.0%.
    const percent = (value: number) => (summary.trajectories === 0 ? '–' : `${(100 * value).toFixed(1)}%`);
    const figures = [
      `avg@${summary.k} ${percent(summary.avgAtK)}`,
      ...Object.entries(summary.passAtK).map(([k, value]) => `pass@${k} ${percent(value)}`),
      `maj@${summary.k} ${percent(summary.majAtK)}`,
      `code/traj ${summary.trajectories === 0 ? '–' : summary.toolUse.codeCallsPerTrajectory.toFixed(2)}`,
    ];
    process.stdout.write(
      `${benchmark.name}: ${figures.join('  ')}  (${summary.trajectories}/${summary.expectedTrajectories} trajectories)` +
        (summary.gradeUnavailable > 0
          ? `  ${summary.gradeUnavailable} without a verdict (grader unavailable)`
          : '') +
        `\nresults in ${outDir}\n`,
    );
    if (result.status === 'interrupted') {
      process.stderr.write(
        `interrupted after ${result.done}/${result.total}; resume with:\n  ${evalResumeCommand(outDir, options.api)}\n`,
      );
      return 130;
    }
    if (result.status === 'incomplete') {
      const ungraded =
        summary.gradeUnavailable > 0
          ? `${summary.gradeUnavailable} grade(s) have no verdict (the grader's sandbox was down; not counted as wrong); `
          : '';
      const failed =
        result.failed > 0
          ? `${result.failed} trajectories ended in an engine or sandbox error (see ${join(outDir, RUN_FILES.errors)}); `
          : '';
      process.stderr.write(
        `${failed}${ungraded}${result.done}/${result.total} done. Retry them with:\n  ${evalResumeCommand(outDir, options.api)}\n`,
      );
      return 1;
    }
    return 0;
  } catch (error) {
    reporter.finish();
    process.stderr.write(
      `the run stopped; what was written is kept. Resume with:\n  ${evalResumeCommand(outDir, options.api)}\n`,
    );
    throw error;
  } finally {
    interrupt.removeEventListener('abort', onInterrupt);
    release();
    unregisterSandbox();
    await target.close();
    await sandbox.close();
    if (gradingSandbox !== sandbox) {
      await releaseSymbolicSessions(gradingSandbox);
      await gradingSandbox.close();
    }
    unregisterLock();
    await releaseLock();
  }
}

/**
 * The same command line with `--resume` and an explicit `--out`. An `--api-key` is left out
 * (never printed): the line after the command names the environment variable to set instead.
 */
function evalResumeCommand(outDir: string, api: EvalCommandOptions['api']): string {
  const { args, dropped } = withoutApiKey(process.argv.slice(2));
  const command = resumeCommand(args, outDir);
  return dropped
    ? `${command}\n  (with the API key in ${API_KEY_VARIABLES[api]}; --api-key is left out so that the key is not printed)`
    : command;
}
