/**
 * The API key an engine client sends, and command lines that are safe to print. The key comes
 * from `--api-key`, else from the environment variable of the API (`OPENAI_API_KEY` for the
 * OpenAI APIs, the OpenAI SDK's convention; `AGENTMATH_ENGINE_API_KEY` for SGLang, vLLM and
 * `agentmath engine serve`). A key is never printed or written: commands show the variable.
 */

import type { EngineOptions } from '../../engine/index.ts';
import { ENGINE_API_KEY_VARIABLE } from '../../engine/local/index.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';

/** The environment variable read for each API when `--api-key` is absent. */
export const API_KEY_VARIABLES: Record<EngineOptions['api'], string> = {
  openai: 'OPENAI_API_KEY',
  'openai-chat': 'OPENAI_API_KEY',
  sglang: ENGINE_API_KEY_VARIABLE,
  vllm: ENGINE_API_KEY_VARIABLE,
};

/** The help text of `--api-key` on every command that calls an engine. */
export const API_KEY_HELP =
  'bearer token for the server (default: OPENAI_API_KEY for openai/openai-chat, ' +
  `${ENGINE_API_KEY_VARIABLE} for sglang/vllm); never printed`;

/**
 * The key to send: `--api-key`, else the API's environment variable (an empty variable counts
 * as unset), else none. An empty `--api-key` is an error, never "no key".
 */
export function resolveApiKey(
  api: EngineOptions['api'],
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (flag !== undefined) {
    if (flag.trim() === '') {
      throw new AgentMathError(
        'CLI_BAD_OPTION',
        `--api-key is empty: give the key, or leave the option out and set ${API_KEY_VARIABLES[api]}`,
      );
    }
    return flag;
  }
  const value = env[API_KEY_VARIABLES[api]];
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** Command-line arguments without `--api-key KEY` / `--api-key=KEY`, and whether one was dropped. */
export function withoutApiKey(args: readonly string[]): { args: string[]; dropped: boolean } {
  const kept: string[] = [];
  let dropped = false;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === '--api-key') {
      dropped = true;
      index++;
    } else if (arg.startsWith('--api-key=')) dropped = true;
    else kept.push(arg);
  }
  return { args: kept, dropped };
}
