/**
 * The agent loop against a server that answers exactly like the official OpenAI API (chat and
 * text completions): the stop string is trimmed and never reported, and `finish_reason` is
 * `"stop"` both for a stop string and for the end of the answer. The code runs in the real
 * jail. Each trajectory makes one code call, gives the answer, and never calls the engine
 * after it (counted on the server): through `runAgent`, and through `agentmath solve`.
 */
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instructedPrompt, runAgent } from '../src/agent/index.ts';
import { modelText } from '../src/agent/loop-state.ts';
import { createEngine, type HttpEngine } from '../src/engine/index.ts';
import { getDialect } from '../src/protocol/index.ts';
import type { SandboxProvider } from '../src/sandbox/types.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';
import { openTestSandbox } from './agent-sandbox.ts';
import { killAllClis, startCli } from './cli-process.ts';
import { type ScriptedServer, startScriptedServer } from './fixtures/scripted-engine-server.ts';

const PROBLEM = 'Compute 19 * 143.';

/** What the model writes before and after its one code call, per dialect. */
const SCRIPTS = {
  tags: {
    toolResultEnd: '</interpreter>',
    turns: [
      '<think>Multiply with Python.\n<code>\nprint(19 * 143)\n</code>\n<interpreter>\n2717\n</interpreter>\n',
      'So the product is 2717.\n</think>\nThe answer is \\boxed{2717}.',
    ],
  },
  markdown: {
    toolResultEnd: '```output',
    turns: [
      'Multiply with Python.\n```python\nprint(19 * 143)\n```\n```output\n2717\n```\n',
      'So the product is 2717, and the answer is \\boxed{2717}.',
    ],
  },
} as const;

/** The reply for the conversation so far: turn n after n tool results, then nothing (EOS). */
function scriptFor(dialect: keyof typeof SCRIPTS) {
  const { toolResultEnd, turns } = SCRIPTS[dialect];
  return (conversation: string): string => {
    // Count only after the problem: the system message names the markup too.
    const after = conversation.slice(conversation.indexOf(PROBLEM));
    return turns[after.split(toolResultEnd).length - 1] ?? '';
  };
}

let sandbox: SandboxProvider;
beforeAll(async () => {
  sandbox = await openTestSandbox();
});
afterAll(async () => {
  killAllClis();
  await sandbox.close();
});

const cases = [
  { api: 'openai-chat', dialect: 'tags' },
  { api: 'openai-chat', dialect: 'markdown' },
  { api: 'openai', dialect: 'tags' },
  { api: 'openai', dialect: 'markdown' },
] as const;

describe.each(cases)('the loop against the official OpenAI API ($api, $dialect)', ({ api, dialect }) => {
  async function solve(script: (conversation: string) => string) {
    const server: ScriptedServer = await startScriptedServer(api, { scriptFor: script });
    const engine: HttpEngine = createEngine({ api, url: server.url, model: 'gpt-scripted' });
    try {
      const trajectory = await runAgent(
        { id: 'p', text: PROBLEM },
        {
          engine,
          tokenizer: null,
          sandbox,
          dialect: getDialect(dialect),
          prompt: instructedPrompt,
          budgets: { maxTotalTokens: 8192, maxNewTokensPerTurn: 1024 },
          retry: { attempts: 1 },
        },
      );
      return { trajectory, server };
    } finally {
      engine.close();
      await server.close();
    }
  }

  it('runs the one code block, gives the answer and calls the server no more', async () => {
    const { trajectory, server } = await solve(scriptFor(dialect));
    // The server never named a stop, and sent the stop strings it was asked to honour.
    expect(server.requests.every((request) => Array.isArray(request.body.stop))).toBe(true);
    expect(trajectory.toolCalls).toHaveLength(1);
    expect(trajectory.toolCalls[0]).toMatchObject({
      code: 'print(19 * 143)',
      outcome: { status: 'ok', stdout: '2717\n' },
    });
    expect(trajectory.finish).toEqual({ reason: 'answer' });
    expect(trajectory.answer).toBe('2717');
    expect(server.requests).toHaveLength(2);
    // The trimmed stop string is restored once, and nothing is invented after the answer.
    const text = modelText(trajectory);
    const closing = getDialect(dialect).stopStrings[0]!;
    expect(text.split(closing)).toHaveLength(2);
    expect(text.endsWith('\\boxed{2717}.')).toBe(true);
  });

  it('ends at an answer given without code after one request', async () => {
    const { trajectory, server } = await solve(() => 'Clearly 19 * 143 = 2717, so \\boxed{2717}.');
    expect(trajectory.finish).toEqual({ reason: 'answer' });
    expect(trajectory.toolCalls).toHaveLength(0);
    expect(server.requests).toHaveLength(1);
  });

  it('ends with no-answer, not another call, when the model stops without one', async () => {
    const { trajectory, server } = await solve(() => 'I am not sure.');
    expect(trajectory.finish).toEqual({ reason: 'no-answer' });
    expect(server.requests).toHaveLength(1);
  });
});

describe('agentmath solve against the official OpenAI API', () => {
  it.each(['tags', 'markdown'] as const)(
    '--api openai-chat --dialect %s: one code call, the answer, two requests',
    async (dialect) => {
      const server = await startScriptedServer('openai-chat', { scriptFor: scriptFor(dialect) });
      try {
        const args = [
          'solve',
          PROBLEM,
          '--engine',
          server.url,
          '--api',
          'openai-chat',
          '--model',
          'gpt-scripted',
        ];
        const result = await startCli([...args, '--dialect', dialect, '--json'], { cwd: tmpdir() }).done;
        expect(result.code).toBe(0);
        const trajectory = JSON.parse(result.stdout) as Trajectory;
        expect(trajectory.finish).toEqual({ reason: 'answer' });
        expect(trajectory.answer).toBe('2717');
        expect(trajectory.toolCalls.map((call) => call.outcome)).toMatchObject([
          { status: 'ok', stdout: '2717\n' },
        ]);
        expect(server.requests).toHaveLength(2);
      } finally {
        await server.close();
      }
    },
    120_000,
  );
});
