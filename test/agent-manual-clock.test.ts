import { describe, expect, it, vi } from 'vitest';
import { problemOnlyPrompt, runAgent } from '../src/agent/index.ts';
import { createByteLevelTokenizer } from '../src/engine/index.ts';
import { tagsDialect } from '../src/protocol/index.ts';
import { functionSandbox, ScriptedEngine, type ScriptPart } from './agent-fixtures.ts';
import { ManualClock } from './manual-clock.ts';

const tokenizer = createByteLevelTokenizer();
const problem = { id: 'p1', text: 'What is 6 times 7?' };
const parts: ScriptPart[] = [
  '<think>Multiply.\n<code>\nx = 6 * 7\nprint(x)\n</code>',
  (output) => `So it is ${output.trim()}.\n</think>\nThe answer is \\boxed{${output.trim()}}.`,
];

describe('the agent loop on a manual clock', () => {
  it('measures engine and tool time in virtual time, with no real sleeping', async () => {
    const clock = new ManualClock();
    const engine = new ScriptedEngine({
      model: { parts },
      tokenizer,
      // Each call takes 250 virtual ms.
      before: () => clock.sleep(250),
    });
    const sandbox = functionSandbox(async () => {
      await clock.sleep(40);
      return { status: 'ok', stdout: '42\n', stderr: '', ms: 40 };
    });
    const trajectory = await clock.run(
      runAgent(problem, {
        engine,
        tokenizer,
        sandbox,
        dialect: tagsDialect,
        prompt: problemOnlyPrompt,
        clock,
      }),
    );
    expect(trajectory.finish?.reason).toBe('answer');
    expect(trajectory.answer).toBe('42');
    expect(trajectory.timing.engineMs).toBe(500);
    expect(trajectory.timing.toolMs).toBe(40);
    expect(trajectory.toolCalls[0]?.ms).toBe(40);
    expect(clock.now()).toBe(540);
  });

  it('times out and backs off on the clock: ten virtual minutes pass at once', async () => {
    const clock = new ManualClock();
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    try {
      const engine = new ScriptedEngine({
        model: { parts },
        tokenizer,
        before: () => new Promise<void>(() => {}),
      });
      const events: string[] = [];
      const trajectory = await clock.run(
        runAgent(problem, {
          engine,
          tokenizer,
          sandbox: functionSandbox(() => ({ status: 'ok', stdout: '', stderr: '', ms: 0 })),
          dialect: tagsDialect,
          prompt: problemOnlyPrompt,
          clock,
          engineTimeoutMs: 200_000,
          retry: { attempts: 3, baseDelayMs: 1_000, maxDelayMs: 5_000 },
          onEvent: (event) => {
            if (event.type === 'engine-retry') events.push(`${event.attempt}:${event.delayMs}`);
          },
        }),
      );
      expect(trajectory.finish?.reason).toBe('error');
      expect(trajectory.finish?.error?.message).toMatch(/ENGINE_TIMEOUT/);
      expect(events).toEqual(['1:1000', '2:2000']);
      // Three timeouts and two back-offs, exactly, in virtual time.
      expect(trajectory.timing.engineMs).toBe(3 * 200_000 + 1_000 + 2_000);
      expect(clock.now()).toBe(603_000);
      expect(setTimeoutSpy).not.toHaveBeenCalled();
    } finally {
      setTimeoutSpy.mockRestore();
    }
  });
});
