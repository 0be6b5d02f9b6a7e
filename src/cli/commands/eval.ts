/**
 * `agentmath eval`: runs the agent on a benchmark with k samples per problem, grades every
 * trajectory, and writes config.json, trajectories.jsonl and summary.json to the output
 * folder (resumable). This file only wires options to `src/eval`, `src/agent`, `src/engine`,
 * `src/sandbox` and `src/grader`.
 */
import { join, resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type AgentOptions, type PromptBuilderName, promptBuilders, runAgent } from '../../agent/index.ts';
import {
  BUILTIN_BENCHMARKS,
  createProgressReporter,
  type FieldMapping,
  gradeTrajectory,
  loadBenchmark,
  RUN_FILES,
  runEval,
} from '../../eval/index.ts';
import { answersEquivalent, gradeAnswer } from '../../grader/index.ts';
import { getDialect } from '../../protocol/index.ts';
import { createLocalSandbox, SandboxClient } from '../../sandbox/index.ts';
import type { SandboxProvider } from '../../sandbox/types.ts';
import { API_KEY_HELP, API_KEY_VARIABLES, withoutApiKey } from './api-key.ts';
import { resolveEngineTarget } from './engine-target.ts';

type EvalCommandOptions = {
  bench: string;
  dataDir?: string;
  fields?: FieldMapping;
  limit?: number;
  samples: number;
  concurrency: number;
  out?: string;
  resume?: boolean;
  engine?: string;
  api: 'sglang' | 'vllm' | 'openai' | 'openai-chat';
  model?: string;
  apiKey?: string;
  tokenizer?: string;
  dialect: 'tags' | 'markdown';
  prompt?: PromptBuilderName;
  maxToolCalls?: number;
  maxTokens?: number;
  maxNewTokens?: number;
  temperature: number;
  topP: number;
  seed?: number;
  sandbox?: string;
  sandboxWorkers?: number;
  toolTimeoutMs?: number;
};

const integer = (minimum: number) => (value: string) => {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < minimum) {
    throw new InvalidArgumentError(`expected an integer >= ${minimum}, got "${value}"`);
  }
  return parsed;
};

const number = (value: string) => {
  const parsed = Number(value);
  if (!Number.isFinite(parsed)) throw new InvalidArgumentError(`expected a number, got "${value}"`);
  return parsed;
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
  program
    .command('eval')
    .description(
      'evaluate a model on a benchmark: k graded samples per problem, metrics in the output folder',
    )
    .requiredOption(
      '--bench <name|path>',
      'benchmark file (.jsonl/.parquet), preset (aime24, …) or built-in (arith)',
    )
    .option(
      '--data-dir <dir>',
      'folder of named benchmark files (default: AGENTMATH_DATA_DIR, then ../shared/data/benchmarks)',
    )
    .option('--fields <mapping>', 'column names, e.g. problem=question,answer=solution,id=uid', fieldMapping)
    .option('--limit <n>', 'only the first n problems', integer(1))
    .option('-k, --samples <n>', 'samples per problem', integer(1), 1)
    .option('--concurrency <n>', 'trajectories in flight at once', integer(1), 8)
    .option('--out <dir>', 'output folder (default: runs/eval-<bench>-<time>)')
    .option('--resume', 'continue the run in --out, skipping finished (problem, sample) pairs')
    .option(
      '--engine <url>',
      'inference server base URL (default: the embedded model under .agentmath/models/)',
    )
    .addOption(
      new Option('--api <api>', 'server API')
        .choices(['sglang', 'vllm', 'openai', 'openai-chat'])
        .default('sglang'),
    )
    .option('--model <name>', 'served model name (required for openai and openai-chat)')
    .option('--api-key <key>', API_KEY_HELP)
    .option('--tokenizer <dir>', 'Hugging Face tokenizer folder (token-level engines: sglang, vllm)')
    .addOption(
      new Option('--dialect <name>', 'code-block markup').choices(['tags', 'markdown']).default('tags'),
    )
    .addOption(
      new Option(
        '--prompt <builder>',
        'how a problem becomes messages (default: instructed; problem-only for the embedded model)',
      ).choices(Object.keys(promptBuilders)),
    )
    .option('--max-tool-calls <n>', "code calls per trajectory (default: the agent's, 16)", integer(0))
    .option(
      '--max-tokens <n>',
      "context budget: prompt + response tokens (default: the agent's, 16384)",
      integer(1),
    )
    .option('--max-new-tokens <n>', "tokens per engine call (default: the agent's, 4096)", integer(1))
    .option('--temperature <t>', 'sampling temperature', number, 0.6)
    .option('--top-p <p>', 'nucleus sampling', number, 0.95)
    .option('--seed <s>', 'sample i of every problem uses seed s + i', integer(0))
    .option('--sandbox <url>', 'sandbox node URL (default: a local pool of jailed workers)')
    .option('--sandbox-workers <n>', 'local pool size (default: the concurrency)', integer(1))
    .option('--tool-timeout-ms <ms>', 'time limit of one code call', integer(1))
    .action(async (options: EvalCommandOptions) => {
      process.exitCode = await evalCommand(options);
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
  const target = await resolveEngineTarget(options);
  const { engine, tokenizer } = target;
  const promptName: PromptBuilderName =
    options.prompt ?? (target.embeddedModel !== null ? 'problem-only' : 'instructed');
  // The embedded model cannot read past its context length.
  const maxTokens =
    target.contextTokens === null
      ? options.maxTokens
      : Math.min(options.maxTokens ?? target.contextTokens, target.contextTokens);
  const sandbox: SandboxProvider =
    options.sandbox === undefined
      ? createLocalSandbox({
          maxWorkers: options.sandboxWorkers ?? options.concurrency,
          warmWorkers: Math.min(2, options.sandboxWorkers ?? options.concurrency),
        })
      : new SandboxClient({ url: options.sandbox });
  const dialect = getDialect(options.dialect);
  const agentConfig = {
    budgets: {
      ...(maxTokens === undefined ? {} : { maxTotalTokens: maxTokens }),
      ...(options.maxToolCalls === undefined ? {} : { maxToolCalls: options.maxToolCalls }),
      ...(options.maxNewTokens === undefined ? {} : { maxNewTokensPerTurn: options.maxNewTokens }),
    },
    sampling: { temperature: options.temperature, topP: options.topP },
    tool: options.toolTimeoutMs === undefined ? {} : { timeoutMs: options.toolTimeoutMs },
  };
  const agentOptions: AgentOptions = {
    ...agentConfig,
    engine,
    tokenizer,
    sandbox,
    dialect,
    prompt: promptBuilders[promptName],
  };
  const config = {
    command: 'eval',
    benchmarkSource: benchmark.source,
    limit: options.limit ?? null,
    engine:
      target.embeddedModel !== null
        ? { api: 'sglang', url: 'embedded', model: target.embeddedModel, name: engine.name }
        : { api: options.api, url: options.engine ?? null, model: options.model ?? null, name: engine.name },
    tokenizer:
      target.embeddedModel !== null
        ? target.embeddedModel
        : options.tokenizer === undefined
          ? null
          : resolve(options.tokenizer),
    dialect: options.dialect,
    prompt: promptName,
    agent: agentConfig,
    seed: options.seed ?? null,
    sandbox: options.sandbox ?? 'local',
  };

  const interrupt = new AbortController();
  let interrupts = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupts++;
    if (interrupts > 1) process.exit(130);
    process.stderr.write(
      `\n${signal}: stopping; in-flight trajectories are dropped (Ctrl-C again to quit now)\n`,
    );
    interrupt.abort(new Error(signal));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
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
      config,
      signal: interrupt.signal,
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
      grade: (trajectory, problem) => gradeTrajectory(trajectory, problem.answer, gradeAnswer, { sandbox }),
      equivalent: (left, right) => answersEquivalent(left, right, { sandbox }),
    });
    reporter.finish();
    const { summary } = result;
    const passes = Object.entries(summary.passAtK)
      .map(([k, value]) => `pass@${k} ${(100 * value).toFixed(1)}%`)
      .join('  ');
    process.stdout.write(
      `${benchmark.name}: avg@${summary.k} ${(100 * summary.avgAtK).toFixed(1)}%  ${passes}  maj@${summary.k} ${(100 * summary.majAtK).toFixed(1)}%  ` +
        `code/traj ${summary.toolUse.codeCallsPerTrajectory.toFixed(2)}  (${summary.trajectories}/${summary.expectedTrajectories} trajectories)\n` +
        `results in ${outDir}\n`,
    );
    if (result.status === 'interrupted') {
      process.stderr.write(
        `interrupted after ${result.done}/${result.total}; resume with:\n  ${resumeCommand(outDir, options.api)}\n`,
      );
      return 130;
    }
    if (result.status === 'incomplete') {
      process.stderr.write(
        `${result.failed} trajectories ended in an engine or sandbox error (see ${join(outDir, RUN_FILES.errors)}); ` +
          `${result.done}/${result.total} done. Retry them with:\n  ${resumeCommand(outDir, options.api)}\n`,
      );
      return 1;
    }
    return 0;
  } catch (error) {
    reporter.finish();
    process.stderr.write(
      `the run stopped; what was written is kept. Resume with:\n  ${resumeCommand(outDir, options.api)}\n`,
    );
    throw error;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await target.close();
    await sandbox.close();
  }
}

/**
 * The same command line with `--resume` and an explicit `--out`. An `--api-key` is left out
 * (never printed): the line after the command names the environment variable to set instead.
 */
function resumeCommand(outDir: string, api: EvalCommandOptions['api']): string {
  const { args: safe, dropped } = withoutApiKey(process.argv.slice(2));
  const args = safe.filter((arg) => arg !== '--resume');
  const outIndex = args.findIndex((arg) => arg === '--out' || arg.startsWith('--out='));
  if (outIndex !== -1) args.splice(outIndex, args[outIndex] === '--out' ? 2 : 1);
  const command = ['agentmath', ...args, '--out', outDir, '--resume'].map(shellQuote).join(' ');
  return dropped
    ? `${command}\n  (with the API key in ${API_KEY_VARIABLES[api]}; --api-key is left out so that the key is not printed)`
    : command;
}
function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`;
}
