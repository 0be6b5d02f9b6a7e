/**
 * `agentmath solve "PROBLEM"`: one trajectory, printed as `inspect` prints one while it
 * streams (turn by turn), then the final answer; `--json` prints the Trajectory record. The
 * engine is `--engine URL` (SGLang, vLLM, OpenAI-compatible), or the embedded model when a
 * checkpoint exists under `.agentmath/models/` (its PyTorch worker is started and stopped here,
 * also on a signal or a closed stdout); code runs in a local jailed pool unless `--sandbox URL`
 * names a sandbox server. Exit status: 0 with an answer, 1 without one (or on an engine or
 * sandbox failure), 2 for a bad command line, an empty problem, or a prompt longer than the
 * model's context.
 */
import { type Command, Option } from 'commander';
import { type AgentEvent, promptBuilders, renderPrompt, runAgent } from '../../agent/index.ts';
import { getDialect } from '../../protocol/index.ts';
import { createLocalSandbox, SandboxClient } from '../../sandbox/index.ts';
import type { SandboxProvider } from '../../sandbox/types.ts';
import { readTextInput } from '../../shared/text-input.ts';
import { createTrajectoryRenderer, shouldUseColor } from '../../trajectory/index.ts';
import { type AgentFlags, addAgentFlags } from '../agent-flags.ts';
import { existingFolderOption, httpUrlOption, usageError } from '../cli-options.ts';
import { holdSignals, interruptSignal, onShutdown } from '../process-lifecycle.ts';
import { API_KEY_HELP } from './api-key.ts';
import { resolveEngineTarget } from './engine-target.ts';

type SolveFlags = AgentFlags & {
  engine?: string;
  api: 'sglang' | 'vllm' | 'openai' | 'openai-chat';
  model?: string;
  apiKey?: string;
  tokenizer?: string;
  dialect: 'tags' | 'markdown';
  prompt?: keyof typeof promptBuilders;
  json?: boolean;
  sandbox?: string;
};

export function registerSolve(program: Command): void {
  const command = program
    .command('solve')
    .description('solve one problem with the agent loop, streaming the trajectory')
    .argument('<problem>', 'the problem text (- reads it from standard input)')
    .option(
      '--engine <url>',
      'engine URL (default: the embedded model under .agentmath/models/)',
      httpUrlOption,
    )
    .addOption(
      new Option('--api <api>', 'engine API')
        .choices(['sglang', 'vllm', 'openai', 'openai-chat'])
        .default('sglang'),
    )
    .option('--model <name>', 'served model name (required for openai and openai-chat)')
    .option('--api-key <key>', API_KEY_HELP)
    .option(
      '--tokenizer <dir>',
      'folder with tokenizer.json and tokenizer_config.json (token engines)',
      existingFolderOption,
    )
    .addOption(
      new Option('--dialect <name>', 'code-block markup').choices(['tags', 'markdown']).default('tags'),
    )
    .addOption(
      new Option(
        '--prompt <builder>',
        'how the problem becomes messages (default: instructed; problem-only for the embedded model)',
      ).choices(Object.keys(promptBuilders)),
    );
  addAgentFlags(command)
    .option('--sandbox <url>', 'sandbox server URL (default: a local jailed pool)')
    .option('--json', 'print the Trajectory record as JSON')
    .action(async (problemArgument: string, flags: SolveFlags) => {
      process.exitCode = await solve(problemArgument, flags);
    });
}

async function solve(problemArgument: string, flags: SolveFlags): Promise<number> {
  const problemText = problemArgument === '-' ? await readTextInput('-', 'problem') : problemArgument;
  if (problemText.trim() === '')
    throw usageError('the problem is empty: give the problem text (or - to read it)');
  const dialect = getDialect(flags.dialect);
  const budgets = {
    maxToolCalls: flags.maxToolCalls,
    maxTotalTokens: flags.maxTokens,
    maxNewTokensPerTurn: flags.maxNewTokens,
  };
  const sampling = {
    temperature: flags.temperature,
    topP: flags.topP,
    ...(flags.seed === undefined ? {} : { seed: flags.seed }),
  };
  const target = await resolveEngineTarget(flags);
  const sandbox: SandboxProvider = flags.sandbox
    ? new SandboxClient({ url: flags.sandbox })
    : createLocalSandbox({ maxWorkers: 1, warmWorkers: 1 });
  const unregisterSandbox = onShutdown(() => sandbox.close());
  const release = holdSignals();
  try {
    // The embedded model cannot read past its context length.
    if (target.contextTokens !== null)
      budgets.maxTotalTokens = Math.min(budgets.maxTotalTokens, target.contextTokens);
    const promptName = flags.prompt ?? (target.embeddedModel !== null ? 'problem-only' : 'instructed');
    const prompt = promptBuilders[promptName];
    if (target.tokenizer !== null) {
      const messages = prompt({ id: 'cli', text: problemText }, dialect);
      const promptTokens = target.tokenizer.encode(renderPrompt(messages, target.tokenizer)).length;
      if (promptTokens >= budgets.maxTotalTokens) {
        throw usageError(
          `the prompt is ${promptTokens} tokens and does not fit the context budget of ${budgets.maxTotalTokens} tokens` +
            (target.contextTokens === null
              ? ' (--max-tokens)'
              : ` (the model's context is ${target.contextTokens} tokens)`) +
            '; shorten the problem',
        );
      }
    }
    const renderer = createTrajectoryRenderer({
      dialect,
      color: !flags.json && shouldUseColor(process.stdout),
    });
    const print = (text: string) => {
      if (!flags.json && text !== '') process.stdout.write(text);
    };
    const onEvent = (event: AgentEvent) => {
      if (event.type === 'trajectory-start') print(renderer.header(event.trajectory));
      else if (event.type === 'turn-end') print(renderer.segment(event.segment));
      else if (event.type === 'tool-result') print(renderer.segment(event.segment, event.toolCall));
      else if (event.type === 'engine-retry') {
        if (!flags.json)
          process.stderr.write(
            `engine retry ${event.attempt} in ${event.delayMs} ms: ${event.error.message}\n`,
          );
      } else if (event.type === 'trajectory-finish') print(renderer.footer(event.trajectory));
    };
    const trajectory = await runAgent(
      { id: 'cli', text: problemText },
      {
        engine: target.engine,
        tokenizer: target.tokenizer,
        sandbox,
        dialect,
        prompt,
        budgets,
        sampling,
        tool: { timeoutMs: flags.toolTimeoutMs },
        engineTimeoutMs: flags.engineTimeoutMs,
        onEvent,
        signal: interruptSignal(),
        meta: { engine: target.engine.name },
      },
    );
    if (flags.json) process.stdout.write(`${JSON.stringify(trajectory)}\n`);
    else process.stdout.write(`\nAnswer: ${trajectory.answer ?? '(none)'}\n`);
    const finish = trajectory.finish;
    if (finish?.reason === 'error')
      process.stderr.write(
        `agentmath solve: the trajectory failed: [${finish.error?.code ?? 'ERROR'}] ${finish.error?.message ?? 'engine or sandbox error'}\n`,
      );
    else if (trajectory.answer === null)
      process.stderr.write(`agentmath solve: no answer (finish: ${finish?.reason ?? 'none'})\n`);
    return trajectory.answer === null ? 1 : 0;
  } finally {
    release();
    unregisterSandbox();
    await target.close();
    await sandbox.close();
  }
}
