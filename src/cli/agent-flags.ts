/**
 * The agent-loop flags shared by `solve` and `eval` (and any command that runs trajectories):
 * budgets, sampling, the code-call limit and the engine timeout. Every default is read from
 * the zod schema that owns it, so `--help` shows what the code uses.
 */
import type { Command } from 'commander';
import { budgetsSchema, toolOptionsSchema } from '../agent/index.ts';
import { evalSamplingSchema } from '../eval/index.ts';
import { defaultOf, integerOption, numberOption } from './cli-options.ts';
import { addEngineTimeoutOption } from './commands/engine-target.ts';

export type AgentFlags = {
  maxToolCalls: number;
  maxTokens: number;
  maxNewTokens: number;
  temperature: number;
  topP: number;
  seed?: number;
  toolTimeoutMs: number;
  engineTimeoutMs: number;
};

/** Adds the agent-loop flags to `command`. */
export function addAgentFlags(command: Command, seedHelp = 'sampling seed'): Command {
  command
    .option(
      '--max-tool-calls <n>',
      'code calls per trajectory',
      integerOption({ max: 100_000 }),
      defaultOf(budgetsSchema, 'maxToolCalls'),
    )
    .option(
      '--max-tokens <n>',
      "context budget: prompt + response tokens (capped by the embedded model's context)",
      integerOption({ min: 1 }),
      defaultOf(budgetsSchema, 'maxTotalTokens'),
    )
    .option(
      '--max-new-tokens <n>',
      'tokens per engine call',
      integerOption({ min: 1 }),
      defaultOf(budgetsSchema, 'maxNewTokensPerTurn'),
    )
    .option(
      '--temperature <t>',
      'sampling temperature',
      numberOption({ min: 0, max: 100 }),
      defaultOf(evalSamplingSchema, 'temperature'),
    )
    .option(
      '--top-p <p>',
      'nucleus sampling',
      numberOption({ min: 0, minExclusive: true, max: 1 }),
      defaultOf(evalSamplingSchema, 'topP'),
    )
    .option('--seed <s>', seedHelp, integerOption())
    .option(
      '--tool-timeout-ms <ms>',
      'time limit of one code call',
      integerOption({ min: 1 }),
      defaultOf(toolOptionsSchema, 'timeoutMs'),
    );
  return addEngineTimeoutOption(command);
}
