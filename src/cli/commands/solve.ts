/**
 * `agentmath solve "PROBLEM"`: one trajectory, printed as `inspect` prints one while it
 * streams (turn by turn), then the final answer; `--json` prints the Trajectory record. The
 * engine is `--engine URL` (SGLang, vLLM, OpenAI-compatible), or the embedded model when a
 * checkpoint exists under `.agentmath/models/` (its PyTorch worker is started and stopped here); code runs in a local jailed pool unless
 * `--sandbox URL` names a sandbox server.
 */
import type { Command } from 'commander';
import { type AgentEvent, promptBuilders, runAgent } from '../../agent/index.ts';
import { getDialect } from '../../protocol/index.ts';
import { createLocalSandbox, SandboxClient } from '../../sandbox/index.ts';
import type { SandboxProvider } from '../../sandbox/types.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { createTrajectoryRenderer, shouldUseColor } from '../../trajectory/index.ts';
import { resolveEngineTarget } from './engine-target.ts';

type SolveFlags = {
  engine?: string;
  api: 'sglang' | 'vllm' | 'openai' | 'openai-chat';
  model?: string;
  apiKey?: string;
  tokenizer?: string;
  dialect: string;
  prompt?: string;
  maxToolCalls: string;
  maxTokens: string;
  maxNewTokens: string;
  temperature: string;
  topP: string;
  seed?: string;
  json?: boolean;
  sandbox?: string;
};

/** The flags as numbers, or an error naming the flag. */
function numberFlag(name: string, value: string, check: (n: number) => boolean, what: string): number {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed) || !check(parsed)) {
    throw new AgentMathError('CLI_BAD_OPTION', `--${name} must be ${what} (got "${value}")`);
  }
  return parsed;
}

export function registerSolve(program: Command): void {
  program
    .command('solve')
    .description('solve one problem with the agent loop, streaming the trajectory')
    .argument('<problem>', 'the problem text')
    .option('--engine <url>', 'engine URL (default: the embedded model under .agentmath/models/)')
    .option('--api <api>', 'engine API: sglang | vllm | openai | openai-chat', 'sglang')
    .option('--model <name>', 'served model name (required for openai and openai-chat)')
    .option(
      '--api-key <key>',
      'bearer token for the server (default: OPENAI_API_KEY for openai/openai-chat, AGENTMATH_ENGINE_API_KEY for sglang/vllm); never printed',
    )
    .option('--tokenizer <dir>', 'folder with tokenizer.json and tokenizer_config.json (token engines)')
    .option('--dialect <name>', 'tags | markdown', 'tags')
    .option('--prompt <builder>', 'instructed | problem-only (default: problem-only for the embedded model)')
    .option('--max-tool-calls <n>', 'tool calls per trajectory', '16')
    .option('--max-tokens <n>', 'context budget: prompt + response tokens', '16384')
    .option('--max-new-tokens <n>', 'tokens per engine call', '4096')
    .option('--temperature <t>', 'sampling temperature', '0.6')
    .option('--top-p <p>', 'nucleus sampling', '0.95')
    .option('--seed <s>', 'sampling seed')
    .option('--sandbox <url>', 'sandbox server URL (default: a local jailed pool)')
    .option('--json', 'print the Trajectory record as JSON')
    .action(async (problemText: string, flags: SolveFlags) => {
      const api = flags.api;
      if (!['sglang', 'vllm', 'openai', 'openai-chat'].includes(api)) {
        throw new AgentMathError(
          'CLI_BAD_OPTION',
          `--api must be sglang, vllm, openai or openai-chat (got "${api}")`,
        );
      }
      const dialect = getDialect(flags.dialect);
      const budgets = {
        maxToolCalls: numberFlag(
          'max-tool-calls',
          flags.maxToolCalls,
          (n) => Number.isInteger(n) && n >= 0,
          'an integer >= 0',
        ),
        maxTotalTokens: numberFlag(
          'max-tokens',
          flags.maxTokens,
          (n) => Number.isInteger(n) && n > 0,
          'a positive integer',
        ),
        maxNewTokensPerTurn: numberFlag(
          'max-new-tokens',
          flags.maxNewTokens,
          (n) => Number.isInteger(n) && n > 0,
          'a positive integer',
        ),
      };
      const sampling = {
        temperature: numberFlag('temperature', flags.temperature, (n) => n >= 0, 'a number >= 0'),
        topP: numberFlag('top-p', flags.topP, (n) => n > 0 && n <= 1, 'a number in (0, 1]'),
        ...(flags.seed === undefined
          ? {}
          : { seed: numberFlag('seed', flags.seed, Number.isInteger, 'an integer') }),
      };
      const target = await resolveEngineTarget(flags);
      // The embedded model cannot read past its context length.
      if (target.contextTokens !== null)
        budgets.maxTotalTokens = Math.min(budgets.maxTotalTokens, target.contextTokens);
      const promptName = flags.prompt ?? (target.embeddedModel !== null ? 'problem-only' : 'instructed');
      if (!(promptName in promptBuilders)) {
        throw new AgentMathError(
          'CLI_BAD_OPTION',
          `--prompt must be instructed or problem-only (got "${promptName}")`,
        );
      }
      const prompt = promptBuilders[promptName as keyof typeof promptBuilders];
      const sandbox: SandboxProvider = flags.sandbox
        ? new SandboxClient({ url: flags.sandbox })
        : createLocalSandbox({ maxWorkers: 1, warmWorkers: 1 });
      const abort = new AbortController();
      const onSigint = () => abort.abort();
      process.once('SIGINT', onSigint);
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
      try {
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
            onEvent,
            signal: abort.signal,
            meta: { engine: target.engine.name },
          },
        );
        if (flags.json) process.stdout.write(`${JSON.stringify(trajectory)}\n`);
        else process.stdout.write(`\nAnswer: ${trajectory.answer ?? '(none)'}\n`);
        if (trajectory.finish?.reason === 'error') process.exitCode = 1;
      } finally {
        process.off('SIGINT', onSigint);
        await target.close();
        await sandbox.close();
      }
    });
}
