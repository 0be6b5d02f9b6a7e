import { describe, expect, it } from 'vitest';
import type { AgentEvent, AgentOptions } from '../src/agent/index.ts';
import { problemOnlyPrompt, resumeAgent, runAgent, SessionPark } from '../src/agent/index.ts';
import { createByteLevelTokenizer, type GenerateResult } from '../src/engine/index.ts';
import { abortedResult } from '../src/engine/response-parsing.ts';
import { tagsDialect } from '../src/protocol/index.ts';
import type { ExecutionOutcome } from '../src/sandbox/types.ts';
import { responseTokens } from '../src/trajectory/loss-mask.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';
import { trajectorySchema } from '../src/trajectory/trajectory.ts';
import {
  functionSandbox,
  ScriptedEngine,
  type ScriptedEngineOptions,
  type ScriptPart,
  seededRandom,
} from './agent-fixtures.ts';

const tokenizer = createByteLevelTokenizer();
const dialect = tagsDialect;
const problem = { id: 'p1', text: 'What is 6 times 7?' };

/** Runs Python-like cells from a table: code → outcome. */
function tableSandbox(table: Record<string, ExecutionOutcome>) {
  return functionSandbox(
    (code) =>
      table[code] ?? { status: 'error', stdout: '', stderr: '', exception: `unknown cell ${code}`, ms: 1 },
  );
}

const ok = (stdout: string): ExecutionOutcome => ({ status: 'ok', stdout, stderr: '', ms: 1 });

function options(
  parts: readonly ScriptPart[],
  sandbox: AgentOptions['sandbox'],
  extra: Omit<Partial<AgentOptions>, 'engine'> & { scripted?: Partial<ScriptedEngineOptions> } = {},
): AgentOptions & { engine: ScriptedEngine } {
  const { scripted: engineOptions, ...rest } = extra;
  const engine = new ScriptedEngine({ model: { parts }, tokenizer, ...engineOptions });
  return {
    engine,
    tokenizer,
    sandbox,
    dialect,
    prompt: problemOnlyPrompt,
    retry: { baseDelayMs: 1 },
    ...rest,
  };
}

const answerParts: ScriptPart[] = [
  '<think>Multiply.\n<code>\nx = 6 * 7\nprint(x)\n</code>',
  (output) => `So it is ${output.trim()}.\n</think>\nThe answer is \\boxed{${output.trim()}}.`,
];

describe('runAgent', () => {
  it('runs a code block, feeds the output back and finishes with the answer', async () => {
    const sandbox = tableSandbox({ 'x = 6 * 7\nprint(x)': ok('42\n') });
    const events: AgentEvent[] = [];
    const trajectory = await runAgent(problem, {
      ...options(answerParts, sandbox),
      onEvent: (event) => events.push(event),
    });

    expect(trajectory.finish).toEqual({ reason: 'answer' });
    expect(trajectory.answer).toBe('42');
    expect(trajectory.segments.map((segment) => segment.kind)).toEqual(['model', 'tool', 'model']);
    expect(trajectory.toolCalls).toHaveLength(1);
    expect(trajectory.toolCalls[0]?.outcome).toEqual(ok('42\n'));
    expect(trajectory.segments[1]?.text).toBe('\n<interpreter>\n42\n</interpreter>\n');
    expect(() => trajectorySchema.parse(trajectory)).not.toThrow();
    expect(sandbox.opened).toBe(1);
    expect(sandbox.closed).toBe(1);

    // Model tokens are the engine's, tool tokens are the tool text tokenized alone with mask 0.
    const view = responseTokens(trajectory)!;
    const tool = trajectory.segments[1]!;
    const firstModel = trajectory.segments[0]!;
    expect(tool.tokenIds).toEqual(tokenizer.encode(tool.text));
    expect(view.lossMask).toEqual([
      ...firstModel.tokenIds!.map(() => 1),
      ...tool.tokenIds!.map(() => 0),
      ...trajectory.segments[2]!.tokenIds!.map(() => 1),
    ]);
    const toolStart = firstModel.tokenIds!.length;
    expect(
      view.logprobs.slice(toolStart, toolStart + tool.tokenIds!.length).every((value) => value === 0),
    ).toBe(true);
    expect(trajectory.segments[2]!.tokenIds!.at(-1)).toBe(256);

    expect(trajectory.prompt.tokenIds).toEqual(
      tokenizer.encode('<|user|>\nWhat is 6 times 7?\n<|assistant|>\n'),
    );
    expect(events.map((event) => event.type)).toEqual([
      'trajectory-start',
      'turn-start',
      'turn-end',
      'tool-call',
      'tool-result',
      'turn-start',
      'turn-end',
      'trajectory-finish',
    ]);
    expect(trajectory.timing.finishedAt).not.toBeNull();
    expect(trajectory.timing.toolMs).toBeGreaterThanOrEqual(0);
  });

  it('sends the exact context ids to the engine on every call', async () => {
    const sandbox = tableSandbox({ 'x = 6 * 7\nprint(x)': ok('42\n') });
    const agentOptions = options(answerParts, sandbox);
    const trajectory = await runAgent(problem, agentOptions);
    const second = agentOptions.engine.requests[1]!;
    expect(second.promptTokenIds).toEqual([
      ...trajectory.prompt.tokenIds!,
      ...trajectory.segments[0]!.tokenIds!,
      ...trajectory.segments[1]!.tokenIds!,
    ]);
    expect(second.stop).toEqual(['</code>']);
    expect(second.sessionId).toBe(trajectory.id);
  });

  it('shows the model its error and lets it fix the code', async () => {
    const sandbox = tableSandbox({
      'print(y)': {
        status: 'error',
        stdout: '',
        stderr: '',
        exception:
          'Traceback (most recent call last):\n  File "<cell>", line 1\nNameError: name \'y\' is not defined',
        ms: 1,
      },
      'y = 5\nprint(y)': ok('5\n'),
    });
    const parts: ScriptPart[] = [
      '<think><code>\nprint(y)\n</code>',
      (output) => {
        expect(output).toContain("NameError: name 'y' is not defined");
        return 'Define it first.\n<code>\ny = 5\nprint(y)\n</code>';
      },
      (output) => `</think>\n\\boxed{${output.trim()}}`,
    ];
    const trajectory = await runAgent(problem, options(parts, sandbox));
    expect(trajectory.toolCalls.map((call) => call.outcome.status)).toEqual(['error', 'ok']);
    expect(trajectory.finish?.reason).toBe('answer');
    expect(trajectory.answer).toBe('5');
  });

  it('detects a stop string spread over many tokens, and over two engine calls', async () => {
    const sandbox = tableSandbox({ 'x = 6 * 7\nprint(x)': ok('42\n') });
    const whole = await runAgent(problem, options(answerParts, sandbox));
    const codeEnd = (answerParts[0] as string).length;
    // Cut the first call inside `</code>`: `</co` | `de>`. No engine matches across calls.
    for (const cut of [codeEnd - 3, codeEnd - 1, codeEnd - 6]) {
      const split = await runAgent(
        problem,
        options(answerParts, sandbox, { budgets: { maxNewTokensPerTurn: cut } }),
      );
      expect(split.toolCalls.map((call) => call.code)).toEqual(['x = 6 * 7\nprint(x)']);
      expect(split.finish?.reason).toBe('answer');
      expect(responseTokens(split)).toEqual(responseTokens(whole));
    }
  });

  it('builds the same trajectory whether the engine trims the stop string or keeps it', async () => {
    const sandbox = tableSandbox({ 'x = 6 * 7\nprint(x)': ok('42\n') });
    const kept = await runAgent(problem, options(answerParts, sandbox, { createId: () => 't' }));
    const trimmed = await runAgent(
      problem,
      options(answerParts, sandbox, { createId: () => 't', scripted: { trimStop: true } }),
    );
    expect(trimmed.segments).toEqual(kept.segments);
    expect(trimmed.segments[0]?.text.endsWith('</code>')).toBe(true);
    expect(trimmed.answer).toBe('42');
  });

  it('does not run an unclosed code block when the model ends its response', async () => {
    const sandbox = tableSandbox({});
    const trajectory = await runAgent(problem, options(['<think>\n<code>\nprint(1)\n'], sandbox));
    expect(trajectory.finish).toEqual({ reason: 'no-answer' });
    expect(trajectory.toolCalls).toEqual([]);
    expect(sandbox.opened).toBe(0);
  });

  it('answers an empty code block with empty output without a sandbox round trip', async () => {
    const sandbox = tableSandbox({});
    const parts: ScriptPart[] = [
      '<think><code>\n</code>',
      (output) => `${output.trim()} </think> \\boxed{1}`,
    ];
    const trajectory = await runAgent(problem, options(parts, sandbox));
    expect(trajectory.toolCalls).toEqual([
      { code: '', outcome: { ...ok(''), ms: 0 }, ms: expect.any(Number) },
    ]);
    expect(trajectory.segments[1]?.text).toContain('(no output)');
    expect(trajectory.finish?.reason).toBe('answer');
    expect(sandbox.executed).toEqual([]);
  });

  it('cuts a tool result larger than the cap', async () => {
    const huge = 'z'.repeat(50_000);
    const sandbox = tableSandbox({ "print('z' * 50000)": ok(`${huge}\n`) });
    const parts: ScriptPart[] = ["<code>\nprint('z' * 50000)\n</code>", '\\boxed{ok}'];
    const trajectory = await runAgent(problem, options(parts, sandbox, { tool: { maxOutputChars: 1000 } }));
    const tool = trajectory.segments[1]!;
    expect(tool.text.length).toBeLessThan(1200);
    expect(tool.text).toMatch(/characters cut/);
    expect(tool.tokenIds).toHaveLength(tokenizer.encode(tool.text).length);
    expect(trajectory.finish?.reason).toBe('answer');
  });
});

describe('budgets', () => {
  const loopParts: ScriptPart[] = [
    '<code>\nprint(1)\n</code>',
    '<code>\nprint(1)\n</code>',
    '<code>\nprint(1)\n</code>',
    '\\boxed{1}',
  ];

  it('stops at the tool-call budget without running the extra call', async () => {
    const sandbox = tableSandbox({ 'print(1)': ok('1\n') });
    const trajectory = await runAgent(problem, options(loopParts, sandbox, { budgets: { maxToolCalls: 2 } }));
    expect(trajectory.finish).toEqual({ reason: 'max-tool-calls' });
    expect(trajectory.toolCalls).toHaveLength(2);
    expect(trajectory.segments.at(-1)?.kind).toBe('model');
  });

  it('stops at the context budget and never asks for more tokens than fit', async () => {
    const sandbox = tableSandbox({ 'print(1)': ok('1\n') });
    const agentOptions = options(loopParts, sandbox, { budgets: { maxTotalTokens: 60 } });
    const trajectory = await runAgent(problem, agentOptions);
    expect(trajectory.finish).toEqual({ reason: 'max-tokens' });
    const total = trajectory.prompt.tokenIds!.length + responseTokens(trajectory)!.tokenIds.length;
    expect(total).toBeGreaterThanOrEqual(60);
    for (const request of agentOptions.engine.requests) {
      expect(request.promptTokenIds.length + request.maxNewTokens).toBeLessThanOrEqual(60);
    }
  });

  it('continues a turn cut by the per-turn limit in the next call', async () => {
    const sandbox = tableSandbox({ 'x = 6 * 7\nprint(x)': ok('42\n') });
    const agentOptions = options(answerParts, sandbox, { budgets: { maxNewTokensPerTurn: 5 } });
    const trajectory = await runAgent(problem, agentOptions);
    expect(trajectory.finish?.reason).toBe('answer');
    expect(trajectory.answer).toBe('42');
    expect(agentOptions.engine.requests.length).toBeGreaterThan(10);
    expect(agentOptions.engine.requests.every((request) => request.maxNewTokens <= 5)).toBe(true);
  });

  it('names a misspelt option', async () => {
    const sandbox = tableSandbox({});
    const bad = { ...options(answerParts, sandbox), budgets: { maxToolCall: 3 } } as unknown as AgentOptions;
    await expect(runAgent(problem, bad)).rejects.toMatchObject({
      code: 'AGENT_CONFIG_INVALID',
      message: /budgets/,
    });
  });
});

describe('failures', () => {
  it('retries a failing engine, then finishes with error and its cause', async () => {
    const sandbox = tableSandbox({ 'x = 6 * 7\nprint(x)': ok('42\n') });
    const events: AgentEvent[] = [];
    const agentOptions = options(answerParts, sandbox, {
      onEvent: (event) => events.push(event),
      scripted: {
        before: (call) => {
          if (call >= 1) throw new Error('connection refused');
        },
      },
    });
    const trajectory = await runAgent(problem, agentOptions);
    expect(trajectory.finish?.reason).toBe('error');
    expect(trajectory.finish?.error?.code).toBe('ENGINE_FAILED');
    expect(trajectory.finish?.error?.message).toMatch(/failed 3 time\(s\).*connection refused/);
    expect(agentOptions.engine.requests).toHaveLength(4);
    expect(events.filter((event) => event.type === 'engine-retry')).toHaveLength(2);
    expect(trajectory.toolCalls).toHaveLength(1);
    expect(sandbox.closed).toBe(1);
  });

  it('recovers when a retry succeeds', async () => {
    const sandbox = tableSandbox({ 'x = 6 * 7\nprint(x)': ok('42\n') });
    const trajectory = await runAgent(
      problem,
      options(answerParts, sandbox, {
        scripted: {
          before: (call) => {
            if (call === 1) throw new Error('503');
          },
        },
      }),
    );
    expect(trajectory.finish?.reason).toBe('answer');
  });

  it('gives up on an engine that never answers', async () => {
    const sandbox = tableSandbox({});
    const trajectory = await runAgent(
      problem,
      options(answerParts, sandbox, {
        engineTimeoutMs: 50,
        retry: { attempts: 2, baseDelayMs: 1 },
        scripted: { before: () => new Promise<void>(() => {}) },
      }),
    );
    expect(trajectory.finish?.reason).toBe('error');
    expect(trajectory.finish?.error?.message).toMatch(/ENGINE_TIMEOUT/);
  });

  it('tells the model when its session was lost and goes on in a new one', async () => {
    let crashes = 0;
    const sandbox = functionSandbox((code, state) => {
      if (code === 'crash()') {
        crashes += 1;
        throw new Error('worker exited with signal SIGKILL');
      }
      if (code === 'x = 1') {
        state.set('x', 1);
        return ok('');
      }
      return state.has('x')
        ? ok('1\n')
        : { status: 'error', stdout: '', stderr: '', exception: "NameError: name 'x' is not defined", ms: 1 };
    });
    const parts: ScriptPart[] = [
      '<code>\nx = 1\n</code>',
      '<code>\ncrash()\n</code>',
      (output) => {
        expect(output).toContain('SessionReset');
        return '<code>\nprint(x)\n</code>';
      },
      (output) => `\\boxed{${output.includes('NameError') ? 'lost' : 'kept'}}`,
    ];
    const trajectory = await runAgent(problem, options(parts, sandbox));
    expect(crashes).toBe(1);
    expect(trajectory.toolCalls[1]?.outcome).toEqual({
      status: 'killed',
      reason: 'sandbox session lost: worker exited with signal SIGKILL',
    });
    expect(trajectory.answer).toBe('lost');
    expect(sandbox.opened).toBe(2);
    expect(sandbox.closed).toBe(2);
  });

  it('finishes with error when no session can be opened', async () => {
    const sandbox = { openSession: () => Promise.reject(new Error('pool closed')), close: async () => {} };
    const trajectory = await runAgent(problem, options(answerParts, sandbox));
    expect(trajectory.finish).toEqual({
      reason: 'error',
      error: { code: 'SANDBOX_SESSION_FAILED', message: 'could not open a sandbox session: pool closed' },
    });
  });

  it('stops when the caller aborts, during the engine call or the tool call', async () => {
    const controller = new AbortController();
    const sandbox = functionSandbox(() => new Promise(() => {}));
    const agentOptions = options(answerParts, sandbox, { signal: controller.signal });
    setTimeout(() => controller.abort(), 30);
    const trajectory = await runAgent(problem, agentOptions);
    expect(trajectory.finish).toEqual({ reason: 'aborted' });
    expect(sandbox.closed).toBe(1);

    const engineHangs = options(answerParts, tableSandbox({}), {
      signal: AbortSignal.timeout(30),
      scripted: { before: () => new Promise<void>(() => {}) },
    });
    expect((await runAgent(problem, engineHangs)).finish).toEqual({ reason: 'aborted' });
  });
});

describe('text-only engines', () => {
  it('builds a text-level trajectory from promptText', async () => {
    const sandbox = tableSandbox({ 'x = 6 * 7\nprint(x)': ok('42\n') });
    const agentOptions = options(answerParts, sandbox, { scripted: { textOnly: true, trimStop: true } });
    const trajectory = await runAgent(problem, agentOptions);
    expect(trajectory.finish?.reason).toBe('answer');
    expect(trajectory.prompt.tokenIds).toBeNull();
    expect(trajectory.segments.every((segment) => segment.tokenIds === null)).toBe(true);
    expect(responseTokens(trajectory)).toBeNull();
    const last = agentOptions.engine.requests.at(-1)!;
    expect(last.promptText).toBe(
      trajectory.prompt.text + trajectory.segments[0]!.text + trajectory.segments[1]!.text,
    );
  });

  it('works without a tokenizer, sending chat messages that end with the response so far', async () => {
    const sandbox = tableSandbox({ 'x = 6 * 7\nprint(x)': ok('42\n') });
    const engine = new ScriptedEngine({
      model: { parts: answerParts, responseMarker: 'What is 6 times 7?\n\n' },
      tokenizer,
      textOnly: true,
      trimStop: true,
    });
    const trajectory = await runAgent(problem, { ...options(answerParts, sandbox), engine, tokenizer: null });
    expect(trajectory.finish?.reason).toBe('answer');
    expect(trajectory.prompt).toEqual({ text: 'What is 6 times 7?\n\n', tokenIds: null });
    expect(engine.requests[0]?.messages).toEqual([{ role: 'user', content: 'What is 6 times 7?' }]);
    expect(engine.requests[1]?.messages).toEqual([
      { role: 'user', content: 'What is 6 times 7?' },
      { role: 'assistant', content: trajectory.segments[0]!.text + trajectory.segments[1]!.text },
    ]);
    expect(engine.requests[1]?.promptTokenIds).toEqual([]);
  });
});

/** A seeded script: reasoning words and code cells whose results feed the next part. */
function seededParts(seed: number, cells: number): ScriptPart[] {
  const random = seededRandom(seed);
  const words = ['so', 'then', 'hence', 'note', 'check', 'sum', 'try', 'value', 'prime', 'mod'];
  const prose = (count: number) =>
    Array.from({ length: count }, () => words[Math.floor(random() * words.length)]).join(' ');
  const parts: ScriptPart[] = [];
  for (let cell = 0; cell < cells; cell++) {
    const text = `${prose(8 + Math.floor(random() * 20))}\n<code>\nv${cell} = ${cell} + 1\nprint(v${cell})\n</code>`;
    parts.push(cell === 0 ? `<think>${text}` : (output) => `got ${output.trim()}; ${text}`);
  }
  const closing = prose(12);
  parts.push((output) => `got ${output.trim()}. ${closing}\n</think>\n\\boxed{${output.trim()}}`);
  return parts;
}

function counterSandbox() {
  return functionSandbox((code, state) => {
    const match = /^v(\d+) = (\d+) \+ 1\nprint\(v\d+\)$/.exec(code);
    if (!match) return { status: 'error', stdout: '', stderr: '', exception: 'SyntaxError', ms: 1 };
    const value = Number(match[2]) + 1;
    state.set(`v${match[1]}`, value);
    return ok(`${value}\n`);
  });
}

describe('resumeAgent', () => {
  const parts = seededParts(7, 4);
  const seeded = (sandbox: AgentOptions['sandbox'], extra: Omit<Partial<AgentOptions>, 'engine'> = {}) =>
    options(parts, sandbox, {
      sampling: { temperature: 1, topP: 1, seed: 1234 },
      createId: () => 'traj',
      ...extra,
    });

  async function runInSegments(base: AgentOptions, segment: { maxTokens?: number; maxToolCalls?: number }) {
    const budgets = { ...base.budgets, segment };
    let trajectory: Trajectory = await runAgent(problem, { ...base, budgets });
    const reasons = [trajectory.finish?.reason];
    while (trajectory.finish?.reason === 'segment-budget') {
      trajectory = await resumeAgent(JSON.parse(JSON.stringify(trajectory)) as Trajectory, {
        ...base,
        budgets,
      });
      reasons.push(trajectory.finish?.reason);
    }
    return { trajectory, reasons };
  }

  it('gives each turn of a seeded trajectory its own seed, and keeps it across a segment cut', async () => {
    const base = seeded(counterSandbox());
    await runAgent(problem, base);
    const seeds = base.engine.requests.map((request) => request.seed);
    expect(seeds[0]).toBe(1234);
    expect(new Set(seeds).size).toBe(seeds.length);
    const cut = seeded(counterSandbox());
    await runInSegments(cut, { maxTokens: 37 });
    // More calls (cut mid-turn), but only the turns' seeds.
    const cutSeeds = cut.engine.requests.map((request) => request.seed);
    expect(cutSeeds.length).toBeGreaterThan(seeds.length);
    expect([...new Set(cutSeeds)].sort()).toEqual([...seeds].sort());
  });

  it('gives the same tokens as an uninterrupted run (segments by tokens and by tool calls)', async () => {
    const whole = await runAgent(problem, seeded(counterSandbox()));
    expect(whole.finish?.reason).toBe('answer');
    expect(whole.answer).toBe('4');
    for (const segment of [{ maxTokens: 37 }, { maxToolCalls: 1 }, { maxTokens: 50, maxToolCalls: 2 }]) {
      const sandbox = counterSandbox();
      const { trajectory, reasons } = await runInSegments(seeded(sandbox), segment);
      expect(reasons.length).toBeGreaterThan(2);
      expect(reasons.slice(0, -1).every((reason) => reason === 'segment-budget')).toBe(true);
      expect(trajectory.finish).toEqual({ reason: 'answer' });
      expect(responseTokens(trajectory)).toEqual(responseTokens(whole));
      expect(trajectory.toolCalls.map((call) => call.outcome)).toEqual(
        whole.toolCalls.map((call) => call.outcome),
      );
      expect(trajectory.answer).toBe(whole.answer);
      expect(sandbox.opened).toBe(sandbox.closed);
    }
  });

  it('rebuilds the Python state by replaying earlier code in a new session', async () => {
    const sandbox = counterSandbox();
    const events: AgentEvent[] = [];
    const { trajectory } = await runInSegments(seeded(sandbox, { onEvent: (event) => events.push(event) }), {
      maxToolCalls: 1,
    });
    expect(trajectory.finish?.reason).toBe('answer');
    // Each resumed segment replays every earlier call, then runs its own.
    expect(sandbox.executed.length).toBe(1 + 2 + 3 + 4);
    expect(
      events
        .filter((event) => event.type === 'session-restore')
        .map((event) => event.type === 'session-restore' && event.replayedCalls),
    ).toEqual([1, 2, 3]);
  });

  it('keeps a parked session instead of replaying', async () => {
    const sandbox = counterSandbox();
    const park = new SessionPark();
    const { trajectory } = await runInSegments(seeded(sandbox, { park }), { maxToolCalls: 1 });
    expect(trajectory.finish?.reason).toBe('answer');
    expect(sandbox.executed.length).toBe(4);
    expect(sandbox.opened).toBe(1);
    expect(sandbox.closed).toBe(1);
    expect(park.size).toBe(0);
  });

  /** An engine's `abort` answer (as SGLang gives it) keeping the first `keep` tokens of `result`. */
  function abortedKeeping(result: GenerateResult, keep: number): GenerateResult {
    const tokenIds = (result.tokenIds ?? []).slice(0, keep);
    return {
      tokenIds,
      text: tokenizer.decode(tokenIds),
      logprobs: result.logprobs?.slice(0, keep) ?? null,
      finishReason: 'abort',
      matchedStop: null,
      policyVersion: 0,
    };
  }

  /**
   * Pauses the run on engine calls listed in `pauseOn` (0-based, counted over all calls): the
   * pause fires while the call runs and the engine answers `abort` with the first half of its
   * tokens (as SGLang does), or throws when `partial` is false. Resumes until finished.
   */
  async function runWithPauses(pauseOn: readonly number[], partial: boolean) {
    let calls = 0;
    let controller = new AbortController();
    const inner = seeded(counterSandbox()).engine;
    const engine: AgentOptions['engine'] = {
      name: 'pausing',
      async generate(request, signal) {
        const call = calls++;
        const result = await inner.generate(request);
        if (!pauseOn.includes(call)) return result;
        controller.abort();
        expect(signal?.aborted).toBe(true);
        if (!partial) throw new Error('request aborted');
        return abortedKeeping(result, Math.floor((result.tokenIds?.length ?? 0) / 2));
      },
    };
    const sandbox = counterSandbox();
    const base = { ...seeded(sandbox), engine };
    let trajectory = await runAgent(problem, { ...base, pause: controller.signal, step: 0 });
    const reasons = [trajectory.finish?.reason];
    let step = 0;
    while (trajectory.finish?.reason === 'paused') {
      controller = new AbortController();
      step += 1;
      trajectory = await resumeAgent(JSON.parse(JSON.stringify(trajectory)) as Trajectory, {
        ...base,
        pause: controller.signal,
        step,
      });
      reasons.push(trajectory.finish?.reason);
    }
    return { trajectory, reasons, sandbox };
  }

  it('pauses mid-generation keeping the partial tokens, and resumes token-identically', async () => {
    const whole = await runAgent(problem, seeded(counterSandbox()));
    for (const partial of [true, false]) {
      const { trajectory, reasons, sandbox } = await runWithPauses([0, 2, 3, 6], partial);
      expect(reasons).toEqual(['paused', 'paused', 'paused', 'paused', 'answer']);
      expect(responseTokens(trajectory)).toEqual(responseTokens(whole));
      expect(trajectory.answer).toBe(whole.answer);
      expect(trajectory.toolCalls.map((call) => call.outcome)).toEqual(
        whole.toolCalls.map((call) => call.outcome),
      );
      const model = trajectory.segments.filter((segment) => segment.kind === 'model');
      // Partial segments are kept as the engine returned them, marked `abort`.
      expect(model.filter((segment) => segment.finishReason === 'abort')).toHaveLength(partial ? 4 : 0);
      expect(model.map((segment) => segment.step)).toEqual(
        [...model.map((segment) => segment.step)].sort((a, b) => (a ?? 0) - (b ?? 0)),
      );
      expect(model.at(-1)?.step).toBe(4);
      // Without partial tokens the first paused call leaves nothing behind.
      expect(model[0]?.step).toBe(partial ? 0 : 1);
      expect(sandbox.opened).toBe(sandbox.closed);
      expect(trajectorySchema.safeParse(trajectory).success).toBe(true);
    }
  });

  it('resubmits a request the engine aborted itself (a weight-update pause), keeping its tokens', async () => {
    const whole = await runAgent(problem, seeded(counterSandbox()));
    const inner = seeded(counterSandbox()).engine;
    let calls = 0;
    // Call 1 aborts with half its tokens, call 3 with none (aborted while it waited), as SGLang's
    // and vLLM's `abort` pause answers; nothing on the agent's side asked for either.
    const engine: AgentOptions['engine'] = {
      name: 'preempting',
      async generate(request) {
        const call = calls++;
        const result = await inner.generate(request);
        if (call !== 1 && call !== 3) return { ...result, policyVersion: call < 3 ? 0 : 1 };
        return abortedKeeping(result, call === 1 ? Math.floor((result.tokenIds?.length ?? 0) / 2) : 0);
      },
    };
    const trajectory = await runAgent(problem, { ...seeded(counterSandbox()), engine });
    expect(trajectory.finish).toEqual(whole.finish);
    expect(responseTokens(trajectory)).toEqual(responseTokens(whole));
    const model = trajectory.segments.filter((segment) => segment.kind === 'model');
    expect(model.filter((segment) => segment.finishReason === 'abort')).toHaveLength(1);
    // The tokens after the abort carry the version that sampled them.
    expect(model.at(-1)?.policyVersion).toBe(1);

    let aborts = 0;
    const refusing: AgentOptions['engine'] = {
      name: 'always-aborts',
      async generate() {
        aborts++;
        return abortedResult(true);
      },
    };
    const stuck = await runAgent(problem, { ...seeded(counterSandbox()), engine: refusing });
    expect(stuck.finish).toEqual({ reason: 'aborted' });
    expect(aborts).toBe(4);
  });

  it('pauses before the next turn when asked while a tool call runs, and parks the session', async () => {
    const controller = new AbortController();
    const sandbox = functionSandbox(() => {
      controller.abort();
      return ok('2\n');
    });
    const park = new SessionPark();
    const base = seeded(sandbox, { park });
    const paused = await runAgent(problem, { ...base, pause: controller.signal });
    expect(paused.finish).toEqual({ reason: 'paused' });
    expect(paused.toolCalls).toHaveLength(1);
    expect(paused.segments.at(-1)?.kind).toBe('tool');
    expect(park.size).toBe(1);
    expect(sandbox.closed).toBe(0);
    await park.closeAll();
  });

  it('refuses a trajectory that did not stop at a segment budget', async () => {
    const whole = await runAgent(problem, seeded(counterSandbox()));
    await expect(resumeAgent(whole, seeded(counterSandbox()))).rejects.toMatchObject({
      code: 'TRAJECTORY_NOT_RESUMABLE',
    });
  });
});
