import { describe, expect, it } from 'vitest';
import type { GenerateRequest, GenerateResult } from '../engine/types.ts';
import type { CostModel } from './engine-cost-model.ts';
import { SimulatedEngine } from './simulated-engine.ts';
import { problemHeader, SimulatedPolicy } from './simulated-policy.ts';
import { responseLayout, responseSlice, type TrajectoryPlan } from './trajectory-plan.ts';
import { VirtualClock } from './virtual-clock.ts';

// a = 10 ms, b = 1 ms per sequence, c = 0.01 ms per context token, p = 0.5 ms per prefilled token.
const cost: CostModel = {
  decodeBaseMs: 10,
  decodePerSequenceMs: 1,
  decodePerContextTokenMs: 0.01,
  prefillPerTokenMs: 0.5,
};
// 50 model tokens: "<think>\n" (8) + 23 filler + "\n</think>\n\boxed{1}" (19), no tool calls.
const plan: TrajectoryPlan = { responseTokens: 50, toolCalls: [], answer: '1' };

const encode = (text: string) => Array.from(text, (char) => char.charCodeAt(0));
/** A 102-token prompt naming the problem. */
const prompt = (problem: number) => encode(problemHeader(problem).padEnd(102, ' '));

function setup(options: {
  kvCapacityTokens: number;
  maxRunningRequests?: number;
  hostKv?: { capacityTokens: number; loadPerTokenMs: number };
  chunkedPrefillTokens?: number;
  kvTtlMs?: number;
  plan?: TrajectoryPlan;
}) {
  const clock = new VirtualClock();
  const policy = new SimulatedPolicy({
    planFor: () => options.plan ?? plan,
    decode: (ids) => String.fromCharCode(...ids),
  });
  const residence = new Map<string, { replica: string; version: number }>();
  const replica = (name: string) =>
    new SimulatedEngine({
      name,
      clock,
      policy,
      costModel: cost,
      kvCapacityTokens: options.kvCapacityTokens,
      maxRunningRequests: options.maxRunningRequests ?? 8,
      blockTokens: 4,
      residence,
      ...(options.hostKv === undefined ? {} : { hostKv: options.hostKv }),
      ...(options.chunkedPrefillTokens === undefined
        ? {}
        : { chunkedPrefillTokens: options.chunkedPrefillTokens }),
      ...(options.kvTtlMs === undefined ? {} : { kvTtlMs: options.kvTtlMs }),
    });
  const engine = replica('replica-0');
  const request = (promptTokenIds: number[], sessionId: string): GenerateRequest => ({
    promptTokenIds,
    maxNewTokens: 1000,
    temperature: 1,
    topP: 1,
    stop: ['</code>'],
    sessionId,
  });
  return { clock, engine, request, policy, replica };
}

/** The prompt of a trajectory's next turn: its first prompt, its first output, 30 tokens of tool output. */
const nextTurn = (first: GenerateResult) => [
  ...prompt(0),
  ...(first.tokenIds ?? []),
  ...encode('y'.repeat(30)),
];

/** Generates and records when the result came back. */
async function timed(clock: VirtualClock, promise: Promise<GenerateResult>) {
  const result = await promise;
  return { result, atMs: clock.now() };
}

describe('SimulatedEngine', () => {
  it('one request alone: prefill, then one token per iteration at a + b + c·context', async () => {
    const { clock, engine, request } = setup({ kvCapacityTokens: 10_000 });
    const { result, atMs } = await clock.run(() => timed(clock, engine.generate(request(prompt(0), 'a'))));
    expect(result.text).toBe(responseSlice(responseLayout(plan), 0, 50));
    expect(result.tokenIds).toHaveLength(50);
    expect(result.finishReason).toBe('stop');
    expect(result.matchedStop).toBeNull();
    // 102 × 0.5 + Σ_{j<50} (10 + 1 + 0.01·(102 + j)) = 51 + 550 + 0.01·(5100 + 1225)
    expect(atMs).toBeCloseTo(51 + 550 + 63.25, 6);
    expect(engine.metrics()).toMatchObject({
      promptTokens: 102,
      cachedTokens: 0,
      prefillTokens: 102,
      preemptions: 0,
      generatedTokens: 50,
      decodeIterations: 50,
      prefillMs: 51,
      reprefillMs: 0,
    });
    expect(engine.metrics().busyMs).toBeCloseTo(51 + 550 + 63.25, 6);
  });

  it('two requests sharing a prefix: the second prefills only what the cache lacks', async () => {
    const { clock, engine, request } = setup({ kvCapacityTokens: 10_000 });
    const second = await clock.run(async () => {
      const first = await timed(clock, engine.generate(request(prompt(0), 'a')));
      const startedAt = first.atMs;
      const next = await timed(clock, engine.generate(request(prompt(0), 'b')));
      return { ms: next.atMs - startedAt, cachedTokens: next.result.cachedTokens };
    });
    // 25 full blocks (100 tokens) cached; 2 prefilled.
    expect(second.cachedTokens).toBe(100);
    expect(second.ms).toBeCloseTo(2 * 0.5 + 550 + 63.25, 6);
    expect(engine.metrics()).toMatchObject({
      promptTokens: 204,
      cachedTokens: 100,
      prefillTokens: 104,
      reprefillTokens: 0,
    });
  });

  it("a trajectory's next turn finds its earlier prompt and output cached", async () => {
    const { clock, engine, request } = setup({ kvCapacityTokens: 10_000 });
    await clock.run(async () => {
      const first = await engine.generate(request(prompt(0), 'a'));
      // The turn continues after 30 tokens of tool output: 182 tokens, 38 full blocks (152) of them cached.
      return engine.generate({ ...request(nextTurn(first), 'a'), maxNewTokens: 5 });
    });
    expect(engine.metrics()).toMatchObject({
      cachedTokens: 152,
      prefillTokens: 102 + 30,
      reprefillTokens: 0,
    });
  });

  it('a flush (weight update) drops the cache: the next turn prefills its context again', async () => {
    const { clock, engine, request, policy } = setup({ kvCapacityTokens: 10_000 });
    await clock.run(async () => {
      const first = await engine.generate(request(prompt(0), 'a'));
      policy.version = 1;
      engine.flushCache();
      return engine.generate({ ...request(nextTurn(first), 'a'), maxNewTokens: 5 });
    });
    // 102 + 50 tokens computed before are prefilled again, and the 30 new ones.
    expect(engine.metrics()).toMatchObject({
      cachedTokens: 0,
      prefillTokens: 102 + 182,
      reprefillTokens: 152,
      reprefillWeightUpdateTokens: 152,
      reprefillMovedTokens: 0,
      reprefillEvictedTokens: 0,
      // The first prompt's 102 tokens, then 182 of which the first 152 are re-prefill.
      prefillMs: (102 + 182) * 0.5,
      reprefillMs: 152 * 0.5,
      // The plan's 50 tokens came out in the first turn: the second decodes its one iteration.
      decodeIterations: 50 + 1,
    });
  });

  it('tells re-prefill apart: moved to another replica, or evicted here for room', async () => {
    const { clock, engine, request, replica, policy } = setup({ kvCapacityTokens: 200 });
    const other = replica('replica-1');
    await clock.run(async () => {
      // a's next turn goes to the other replica: its 152 tokens computed before are prefilled there.
      const first = await engine.generate(request(prompt(0), 'a'));
      await other.generate({ ...request(nextTurn(first), 'a'), maxNewTokens: 5 });
      // b's first turn caches 38 blocks here; c's evicts all but b's first 16 (the eviction test
      // below); b's next turn finds 64 tokens and prefills the other 88 it had computed.
      const firstB = await engine.generate(request(prompt(0), 'b'));
      await engine.generate(request(prompt(1), 'c'));
      await engine.generate({ ...request(nextTurn(firstB), 'b'), maxNewTokens: 5 });
    });
    expect(other.metrics()).toMatchObject({ reprefillTokens: 152, reprefillMovedTokens: 152 });

    expect(engine.metrics()).toMatchObject({
      reprefillTokens: 88,
      reprefillEvictedTokens: 88,
      reprefillMovedTokens: 0,
      reprefillWeightUpdateTokens: 0,
      reprefillPreemptedTokens: 0,
    });
    // z's first turn runs on the other replica under version 0; after the weight update its next
    // turn comes here: the update, not the move, is why its 152 tokens are prefilled again.
    const firstZ = await clock.run(() => other.generate(request(prompt(0), 'z')));
    policy.version = 1;
    engine.flushCache();
    other.flushCache();
    await clock.run(() => engine.generate({ ...request(nextTurn(firstZ), 'z'), maxNewTokens: 5 }));
    expect(engine.metrics()).toMatchObject({
      reprefillTokens: 88 + 152,
      reprefillWeightUpdateTokens: 152,
      reprefillMovedTokens: 0,
    });
  });

  it('with a host-memory tier, loads an evicted prefix back instead of prefilling it again', async () => {
    const run = async (hostKv?: { capacityTokens: number; loadPerTokenMs: number }) => {
      const { clock, engine, request } = setup({
        kvCapacityTokens: 200,
        ...(hostKv === undefined ? {} : { hostKv }),
      });
      // As above: c's turn evicts most of b's blocks while b waits on its tool.
      const atMs = await clock.run(async () => {
        const firstB = await engine.generate(request(prompt(0), 'b'));
        await engine.generate(request(prompt(1), 'c'));
        const started = clock.now();
        await engine.generate({ ...request(nextTurn(firstB), 'b'), maxNewTokens: 5 });
        return clock.now() - started;
      });
      return { metrics: engine.metrics(), atMs };
    };
    const without = await run();
    const withHost = await run({ capacityTokens: 1000, loadPerTokenMs: 0.1 });
    expect(without.metrics).toMatchObject({ reprefillEvictedTokens: 88, hostLoadedTokens: 0 });
    expect(withHost.metrics).toMatchObject({ reprefillEvictedTokens: 0, hostLoadedTokens: 88 });
    // 88 tokens at 0.1 ms to load against 0.5 ms to prefill.
    expect(without.atMs - withHost.atMs).toBeCloseTo(88 * (0.5 - 0.1), 6);
  });

  it('with chunked prefill, the decode batch goes on while a long prompt is prefilled a chunk an iteration', async () => {
    // A's 102-token prompt and B's 20,000-token one arrive at once; both plans decode 50 tokens.
    const long = encode(problemHeader(1).padEnd(20_000, ' '));
    const run = async (chunkedPrefillTokens?: number) => {
      const { clock, engine, request } = setup({
        kvCapacityTokens: 100_000,
        ...(chunkedPrefillTokens === undefined ? {} : { chunkedPrefillTokens }),
      });
      const [a, b] = await clock.run(() =>
        Promise.all([
          timed(clock, engine.generate(request(prompt(0), 'a'))),
          timed(clock, engine.generate(request(long, 'b'))),
        ]),
      );
      return { a: a.atMs, b: b.atMs, metrics: engine.metrics() };
    };
    const whole = await run();
    const chunked = await run(256);
    // A is prefilled first (51 ms); B joins at that boundary and finds A's 4 shared blocks, so
    // 19,984 of its tokens are prefilled (9,992 ms). Whole: A decodes only after all of them.
    expect(whole.a).toBeGreaterThan(51 + 19_984 * 0.5);
    // Chunked at 256: each iteration decodes A's next token beside 256 of B's tokens (128 ms),
    // so A is done in B's 50th chunk: 51 + Σ_{j<50} (10 + 1 + 0.01·(102 + j)) + 50 × 128.
    expect(chunked.a).toBeCloseTo(51 + 550 + 63.25 + 50 * 128, 6);
    expect(chunked.a).toBeLessThan(51 + 19_984 * 0.5);
    expect(chunked.b).toBeGreaterThan(51 + 19_984 * 0.5);
    // The chunks cost what the whole prefill costs; every token is decoded once.
    expect(chunked.metrics).toMatchObject({
      prefillTokens: 102 + 19_984,
      prefillMs: (102 + 19_984) * 0.5,
      generatedTokens: 100,
    });
    expect(whole.metrics).toMatchObject({ prefillTokens: 102 + 19_984, generatedTokens: 100 });
  });

  it("pins a waiting session's KV for its time-to-live: kept within it, evictable after", async () => {
    // One tool call: the first turn ends at </code> after 52 tokens, the second decodes 28 more.
    const toolPlan: TrajectoryPlan = {
      responseTokens: 80,
      toolCalls: [{ at: 0.5, outputTokens: 5 }],
      answer: '1',
    };
    // b's first turn leaves 100 + 52 = 152 tokens, 38 blocks; c's 200-token prompt (sharing b's
    // first 4 blocks) fits only if those blocks make room.
    const bPrompt = encode(problemHeader(0).padEnd(100, ' '));
    const other = encode(problemHeader(1).padEnd(200, ' '));
    const run = async (toolMs: number, kvTtlMs?: number) => {
      const { clock, engine, request } = setup({
        kvCapacityTokens: 260,
        plan: toolPlan,
        ...(kvTtlMs === undefined ? {} : { kvTtlMs }),
      });
      const times = await clock.run(async () => {
        const first = await engine.generate(request(bPrompt, 'b'));
        expect(first.matchedStop).toBe('</code>');
        expect(first.tokenIds).toHaveLength(52);
        const toolStarted = clock.now();
        const c = timed(clock, engine.generate(request(other, 'c')));
        // b's tool runs, then its next turn comes back to this replica.
        await clock.sleep(toolMs);
        const next = [...bPrompt, ...(first.tokenIds ?? []), ...encode('y'.repeat(30))];
        const second = await engine.generate(request(next, 'b'));
        expect(second.finishReason).toBe('stop');
        return { c: (await c).atMs - toolStarted };
      });
      return { metrics: engine.metrics(), times };
    };
    // Back within the time-to-live: b's KV was never evicted; c waited for b's next turn.
    const within = await run(100, 1000);
    const withinNoTtl = await run(100);
    expect(withinNoTtl.metrics.reprefillEvictedTokens).toBeGreaterThan(0);
    expect(within.metrics).toMatchObject({ reprefillEvictedTokens: 0, kvPinsUsed: 1 });
    // Back after it: the pin held c out for exactly its 1,000 ms, then b's KV was evicted as without one.
    const after = await run(2000, 1000);
    const afterNoTtl = await run(2000);
    expect(after.metrics.kvPinsExpired).toBeGreaterThanOrEqual(1);
    expect(after.metrics.kvPinsUsed).toBe(0);
    expect(after.times.c - afterNoTtl.times.c).toBeCloseTo(1000, 6);
    expect(after.metrics.reprefillEvictedTokens).toBe(afterNoTtl.metrics.reprefillEvictedTokens);
    expect(after.metrics.reprefillEvictedTokens).toBeGreaterThan(0);
  });

  it('evicts idle prefixes least recently used first, the deepest blocks of a prefix before its head', async () => {
    const { clock, engine, request } = setup({ kvCapacityTokens: 200 });
    await clock.run(async () => {
      // a caches 38 blocks (152 tokens); the prompts of problems 0 and 1 share their first 4 blocks.
      await engine.generate(request(prompt(0), 'a'));
      // c finds 4 blocks, needs 86 tokens more: evicts a's 10 deepest blocks; at its end it
      // caches 13 blocks of its own and evicts 12 more of a's, which keeps blocks 0..15.
      await engine.generate(request(prompt(1), 'c'));
      // b finds those 16 blocks.
      await engine.generate(request(prompt(0), 'b'));
    });
    expect(engine.metrics()).toMatchObject({
      cachedTokens: 16 + 64,
      prefillTokens: 102 + 86 + 38,
      preemptions: 0,
    });
  });

  it('preempts the newest sequence when the batch outgrows the KV capacity, and recomputes it later', async () => {
    const { clock, engine, request } = setup({ kvCapacityTokens: 260 });
    const [d, e] = await clock.run(() =>
      Promise.all([
        timed(clock, engine.generate(request(prompt(0), 'd'))),
        timed(clock, engine.generate(request(prompt(1), 'e'))),
      ]),
    );
    expect(d.result.tokenIds).toHaveLength(50);
    expect(e.result.text).toBe(responseSlice(responseLayout(plan), 0, 50));
    expect(d.atMs).toBeLessThan(e.atMs);
    // e joins after d's first iteration (86 tokens prefilled: 4 blocks shared), both decode 35
    // tokens until 259 of 260 tokens are used, e is preempted (its 137 tokens stay as 34 idle
    // blocks), d decodes its last 14 tokens, evicts 3 of e's blocks when it caches its own,
    // and e comes back to recompute 137 − 124 tokens. Recomputed tokens are not decoded again.
    expect(engine.metrics()).toMatchObject({
      preemptions: 1,
      prefillTokens: 102 + 86 + 13,
      reprefillTokens: 13,
      reprefillPreemptedTokens: 13,
      generatedTokens: 100,
    });
  });

  it('answers an aborted request with finish reason abort', async () => {
    const { clock, engine, request } = setup({ kvCapacityTokens: 10_000 });
    const controller = new AbortController();
    const result = await clock.run(async () => {
      const pending = engine.generate(request(prompt(0), 'a'), controller.signal);
      await clock.sleep(100);
      controller.abort();
      return pending;
    });
    expect(result.finishReason).toBe('abort');
  });
});
