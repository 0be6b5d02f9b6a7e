/**
 * The agent loop end to end across processes: a real HTTP server speaking SGLang's
 * `/generate`, driven through the real SGLang client, and code run by the real jailed sandbox.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentOptions, resumeAgent, runAgent, SessionPark } from '../src/agent/index.ts';
import { createByteLevelTokenizer, createEngine, type HttpEngine } from '../src/engine/index.ts';
import { tagsDialect } from '../src/protocol/index.ts';
import type { SandboxProvider } from '../src/sandbox/types.ts';
import { responseTokens } from '../src/trajectory/loss-mask.ts';
import { type Trajectory, trajectorySchema } from '../src/trajectory/trajectory.ts';
import { type ScriptPart, type SglangServerOptions, startScriptedSglangServer } from './agent-fixtures.ts';
import { openTestSandbox } from './agent-sandbox.ts';

const tokenizer = createByteLevelTokenizer();
const problem = { id: 'p', text: 'Compute 10!.' };
let sandbox: SandboxProvider & { close(): Promise<void> };
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  sandbox = await openTestSandbox();
});

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await sandbox.close();
});

async function serve(
  parts: readonly ScriptPart[],
  behaviour?: SglangServerOptions['behaviour'],
): Promise<{ engine: HttpEngine; calls: () => number }> {
  const server = await startScriptedSglangServer({
    model: { parts },
    tokenizer,
    ...(behaviour ? { behaviour } : {}),
  });
  const engine = createEngine({ api: 'sglang', url: server.url, timeoutMs: 2_000 });
  cleanups.push(
    () => server.close(),
    () => engine.close(),
  );
  return { engine, calls: server.calls };
}

function options(engine: HttpEngine, extra: Partial<AgentOptions> = {}): AgentOptions {
  return {
    engine,
    tokenizer,
    sandbox,
    dialect: tagsDialect,
    sampling: { temperature: 1, topP: 1, seed: 99 },
    retry: { attempts: 3, baseDelayMs: 5 },
    tool: { timeoutMs: 10_000 },
    ...extra,
  };
}

describe('agent loop over SGLang /generate with the jailed sandbox', () => {
  it('runs real Python and answers with its output', async () => {
    const { engine } = await serve([
      '<think>Use Python.\n<code>\nimport math\nn = math.factorial(10)\nprint(n)\n</code>',
      (output) => `It printed ${output.trim()}.\n</think>\nThe answer is \\boxed{${output.trim()}}.`,
    ]);
    const trajectory = await runAgent(problem, options(engine));
    expect(trajectory.finish).toEqual({ reason: 'answer' });
    expect(trajectory.answer).toBe('3628800');
    expect(trajectory.toolCalls[0]?.outcome).toMatchObject({ status: 'ok', stdout: '3628800\n' });
    expect(trajectory.segments[1]?.text).toBe('\n<interpreter>\n3628800\n</interpreter>\n');
    expect(trajectory.timing.toolMs).toBeGreaterThan(0);
    expect(trajectory.timing.engineMs).toBeGreaterThan(0);
    expect(() => trajectorySchema.parse(JSON.parse(JSON.stringify(trajectory)))).not.toThrow();
    // Model segments hold the ids and logprobs the server sent.
    const model = trajectory.segments[0]!;
    expect(model.kind === 'model' && model.logprobs?.length).toBe(model.tokenIds?.length);
  });

  it('shows the model a real traceback and lets it fix the code', async () => {
    const { engine } = await serve([
      '<code>\nprint(total)\n</code>',
      (output) => {
        if (!output.includes("NameError: name 'total' is not defined")) return `unexpected ${output}`;
        return 'Define it.\n<code>\ntotal = sum(range(101))\nprint(total)\n</code>';
      },
      (output) => `\\boxed{${output.trim()}}`,
    ]);
    const trajectory = await runAgent(problem, options(engine));
    expect(trajectory.toolCalls.map((call) => call.outcome.status)).toEqual(['error', 'ok']);
    expect(trajectory.answer).toBe('5050');
  });

  it('cuts a huge output and keeps the trajectory going', async () => {
    const { engine } = await serve(["<code>\nprint('7' * 30000)\n</code>", '\\boxed{done}']);
    const trajectory = await runAgent(problem, options(engine, { tool: { maxOutputChars: 500 } }));
    expect(trajectory.segments[1]!.text.length).toBeLessThan(700);
    expect(trajectory.segments[1]!.text).toMatch(/characters cut/);
    expect(trajectory.answer).toBe('done');
  });

  it('tells the model its session was killed and goes on with a fresh one', async () => {
    const { engine } = await serve([
      '<code>\nsecret = 41\n</code>',
      '<code>\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n</code>',
      '<code>\ntry:\n    print(secret + 1)\nexcept NameError:\n    print("gone")\n</code>',
      (output) => `\\boxed{${output.trim()}}`,
    ]);
    const trajectory = await runAgent(problem, options(engine));
    expect(trajectory.toolCalls.map((call) => call.outcome.status)).toEqual(['ok', 'killed', 'ok']);
    expect(trajectory.segments[3]?.text).toMatch(/SessionReset/);
    expect(trajectory.answer).toBe('gone');
    expect(trajectory.finish?.reason).toBe('answer');
  });

  it('retries an engine that fails mid-trajectory, then finishes with error and its cause', async () => {
    const { engine, calls } = await serve(['<code>\nprint(1)\n</code>', '\\boxed{1}'], (call) =>
      call === 0 ? 'answer' : 'fail',
    );
    const trajectory = await runAgent(problem, options(engine));
    expect(calls()).toBe(4);
    expect(trajectory.finish?.reason).toBe('error');
    expect(trajectory.finish?.error?.code).toBe('ENGINE_FAILED');
    expect(trajectory.finish?.error?.message).toMatch(/failed 3 time\(s\); last error: \[ENGINE_HTTP_5XX\]/);
    expect(trajectory.toolCalls).toHaveLength(1);
  });

  it('does not retry a request the engine refused (HTTP 4xx)', async () => {
    const { engine, calls } = await serve(['<code>\nprint(1)\n</code>', '\\boxed{1}'], (call) =>
      call === 0 ? 'answer' : 'reject',
    );
    const trajectory = await runAgent(problem, options(engine));
    expect(calls()).toBe(2);
    expect(trajectory.finish?.error?.message).toMatch(/failed 1 time\(s\); last error: \[ENGINE_HTTP_4XX\]/);
  });

  it('never hangs on an engine that stops answering', async () => {
    const { engine } = await serve(['<code>\nprint(1)\n</code>', '\\boxed{1}'], (call) =>
      call === 0 ? 'answer' : 'hang',
    );
    const trajectory = await runAgent(
      problem,
      options(engine, { engineTimeoutMs: 300, retry: { attempts: 2, baseDelayMs: 5 } }),
    );
    expect(trajectory.finish?.reason).toBe('error');
    expect(trajectory.finish?.error?.message).toMatch(/ENGINE_TIMEOUT/);
  });

  describe('resume after segment-budget', () => {
    const parts: ScriptPart[] = [
      '<think>Build a list step by step.\n<code>\nxs = [1, 2]\nprint(len(xs))\n</code>',
      (output) => `Length ${output.trim()}. Extend it.\n<code>\nxs.append(sum(xs))\nprint(xs)\n</code>`,
      (output) => `Now ${output.trim()}. Once more.\n<code>\nxs.append(sum(xs))\nprint(sum(xs))\n</code>`,
      (output) => `So the total is ${output.trim()}.\n</think>\n\\boxed{${output.trim()}}`,
    ];

    async function segmented(base: AgentOptions, segment: { maxTokens?: number; maxToolCalls?: number }) {
      const budgets = { segment };
      let trajectory: Trajectory = await runAgent(problem, { ...base, budgets });
      let stops = 0;
      while (trajectory.finish?.reason === 'segment-budget') {
        stops += 1;
        trajectory = await resumeAgent(JSON.parse(JSON.stringify(trajectory)) as Trajectory, {
          ...base,
          budgets,
        });
      }
      return { trajectory, stops };
    }

    it('gives the same tokens as an uninterrupted run, the Python state rebuilt by replay', async () => {
      const { engine } = await serve(parts);
      const whole = await runAgent(problem, options(engine));
      expect(whole.answer).toBe('12');
      for (const segment of [{ maxTokens: 40 }, { maxToolCalls: 1 }]) {
        const { trajectory, stops } = await segmented(options(engine), segment);
        expect(stops).toBeGreaterThanOrEqual(3);
        expect(trajectory.finish).toEqual({ reason: 'answer' });
        expect(responseTokens(trajectory)).toEqual(responseTokens(whole));
        expect(
          trajectory.toolCalls.map((call) => call.outcome.status === 'ok' && call.outcome.stdout),
        ).toEqual(whole.toolCalls.map((call) => call.outcome.status === 'ok' && call.outcome.stdout));
      }
    });

    it('gives the same tokens with the session parked between segments', async () => {
      const { engine } = await serve(parts);
      const whole = await runAgent(problem, options(engine));
      const park = new SessionPark();
      const { trajectory } = await segmented(options(engine, { park }), { maxToolCalls: 1 });
      expect(responseTokens(trajectory)).toEqual(responseTokens(whole));
      expect(park.size).toBe(0);
    });
  });
});
