/**
 * The agent loop's benchmark: what the loop itself costs per turn, and how it behaves with
 * many trajectories in flight.
 *
 * 1. Overhead per turn: trajectories run one after another against the in-process instant
 *    engine and a real sandbox. A turn's wall time (from one `turn-start` to the next, or to
 *    `trajectory-finish`) minus its engine time and its sandbox time (measured around the
 *    call) is the loop's overhead. Beside it, in the same run, a bare baseline loop makes the
 *    same engine and sandbox calls with no records, tokenization or events.
 * 2. Concurrency: many trajectories at once; the largest event-loop stall over the phase
 *    (`perf_hooks.monitorEventLoopDelay`), beside the bare loop under the same sandbox load
 *    (the local pool's own process management runs on the same event loop).
 *    The same number of trajectories without code measures the loop alone.
 * 3. Memory: the heap retained per trajectory in flight, all held before their last turn.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { AgentEvent } from '../agent/agent-event.ts';
import { problemOnlyPrompt } from '../agent/prompt-builder.ts';
import { runAgent } from '../agent/run-agent.ts';
import type { Tokenizer } from '../engine/tokenizer.ts';
import type { Engine, GenerateResult } from '../engine/types.ts';
import type { Dialect } from '../protocol/dialect.ts';
import type { SandboxProvider, SandboxSession } from '../sandbox/types.ts';
import { ascending, percentile } from '../shared/percentile.ts';
import type { TrajectoryFinishReason } from '../trajectory/trajectory.ts';
import { InstantEngine } from './instant-engine.ts';

export type AgentBenchOptions = {
  sandbox: SandboxProvider;
  tokenizer: Tokenizer;
  dialect: Dialect;
  /** Trajectories run one after another for the overhead figures. */
  sequential?: number;
  /** Code blocks per trajectory (each a turn), plus one final answering turn. */
  toolCalls?: number;
  /** Model tokens per turn (reasoning filler before each code block). */
  tokensPerTurn?: number;
  /** Trajectories in flight at once in the concurrency phase. */
  concurrent?: number;
  concurrentToolCalls?: number;
  /** Engine calls per trajectory in the memory phase (each `tokensPerTurn` tokens). */
  memoryTurns?: number;
  /** Concurrency phases: engine replies arrive after 0..this many ms (spread, seeded), as from a serving engine. */
  engineLatencyMs?: number;
  onProgress?: (line: string) => void;
};

export type Quantiles = { p50: number; p99: number; mean: number; count: number };

export type AgentBenchReport = {
  overheadPerTurnMs: Quantiles;
  baselineOverheadPerTurnMs: Quantiles;
  /** Agent overhead p50 / baseline overhead p50. */
  ratioP50: number;
  sandboxCallMs: Quantiles;
  concurrent: {
    trajectories: number;
    toolCallsPerTrajectory: number;
    wallMs: number;
    maxEventLoopStallMs: number;
    p99EventLoopDelayMs: number;
    /** The bare loop with the same engine and sandbox calls, run right after. */
    baselineWallMs: number;
    baselineMaxEventLoopStallMs: number;
    baselineP99EventLoopDelayMs: number;
    finishReasons: Partial<Record<TrajectoryFinishReason, number>>;
  };
  /** Many trajectories with no code: the loop's own stalls, no sandbox pool in the process. */
  loopOnly: {
    trajectories: number;
    turnsPerTrajectory: number;
    wallMs: number;
    maxEventLoopStallMs: number;
    p99EventLoopDelayMs: number;
  };
  memory: { trajectories: number; contextTokens: number; heapPerTrajectoryBytes: number | null };
  /** `stallMet` judges the loop alone (`loopOnly`); with the in-process pool compare agent and baseline. */
  targets: { overheadP50Ms: number; maxStallMs: number; overheadMet: boolean; stallMet: boolean };
};

/** The code block of turn `index`, written the way the dialect's model writes it. */
function benchCode(index: number): string {
  return `x${index} = ${index} * ${index} + 1\nprint(x${index})`;
}

/** Precomputed engine results for one trajectory: code turns, then an answer with EOS. */
export function benchTurns(
  dialect: Dialect,
  tokenizer: Tokenizer,
  toolCalls: number,
  tokensPerTurn: number,
): GenerateResult[] {
  const stop = dialect.stopStrings[0] ?? '';
  const filler = (turn: number) => `Step ${turn}: ${'we check the next case and compare. '.repeat(64)}`;
  const turns: GenerateResult[] = [];
  const make = (text: string, matchedStop: string | null, eos: boolean): GenerateResult => {
    const ids = tokenizer.encode(text);
    if (eos && tokenizer.eosTokenId !== null) ids.push(tokenizer.eosTokenId);
    return {
      tokenIds: ids,
      text,
      logprobs: ids.map(() => -0.5),
      finishReason: 'stop',
      matchedStop,
      stopIncluded: matchedStop !== null,
      policyVersion: 0,
    };
  };
  for (let turn = 0; turn < toolCalls; turn++) {
    const code = `${dialect.markup.code.openText}\n${benchCode(turn)}\n${stop}`;
    const prose = trimToTokens(
      tokenizer,
      filler(turn),
      Math.max(0, tokensPerTurn - tokenizer.encode(code).length),
    );
    turns.push(make(`${turn === 0 ? '<think>' : ''}${prose}\n${code}`, stop, false));
  }
  turns.push(make('\n</think>\nThe answer is \\boxed{42}.', null, true));
  return turns;
}

function trimToTokens(tokenizer: Tokenizer, text: string, tokens: number): string {
  let end = text.length;
  while (end > 0 && tokenizer.encode(text.slice(0, end)).length > tokens) end = Math.floor(end * 0.9);
  return text.slice(0, end);
}

/** Runs both phases and returns the figures. */
export async function runAgentBench(options: AgentBenchOptions): Promise<AgentBenchReport> {
  const {
    sandbox,
    tokenizer,
    dialect,
    sequential = 40,
    toolCalls = 4,
    tokensPerTurn = 256,
    concurrent = 1000,
    concurrentToolCalls = 1,
    memoryTurns = 8,
    engineLatencyMs = 20,
    onProgress = () => {},
  } = options;
  const turns = benchTurns(dialect, tokenizer, toolCalls, tokensPerTurn);
  const problem = { id: 'bench', text: 'Compute the bench value.' };
  const base = {
    tokenizer,
    sandbox,
    dialect,
    prompt: problemOnlyPrompt,
    budgets: { maxTotalTokens: 1_000_000, maxToolCalls: toolCalls + 1, maxNewTokensPerTurn: 100_000 },
  };

  // Phase 1: overhead per turn, agent and bare baseline interleaved so both see the same machine.
  const overhead: number[] = [];
  const baseline: number[] = [];
  const sandboxCalls: number[] = [];
  for (let run = 0; run < sequential; run++) {
    const engine = new InstantEngine({ turns });
    const recorder = turnRecorder();
    await runAgent(problem, { ...base, engine, onEvent: recorder.onEvent });
    if (run > 0) overhead.push(...recorder.overheads());
    for (const ms of recorder.toolMs) sandboxCalls.push(ms);
    const bare = await bareLoop(new InstantEngine({ turns }), sandbox, tokenizer, dialect, problem.text);
    if (run > 0) baseline.push(...bare);
    if (run % 10 === 0) onProgress(`overhead: ${run + 1}/${sequential} trajectories`);
  }

  // Phase 2: many at once, agent and bare baseline under the same sandbox load.
  const concurrentTurns = benchTurns(dialect, tokenizer, concurrentToolCalls, tokensPerTurn);
  const latencyMs = spreadLatency(engineLatencyMs);
  const problemFor = (index: number) => ({
    id: `bench-${index}`,
    text: `Compute bench value number ${index}.`,
  });
  const agentConcurrent = await measureStalls(async () => {
    const engine = new InstantEngine({ turns: concurrentTurns, latencyMs });
    const budgets = { ...base.budgets, maxToolCalls: concurrentToolCalls + 1 };
    return Promise.all(
      Array.from({ length: concurrent }, (_, index) =>
        runAgent(problemFor(index), { ...base, engine, budgets }),
      ),
    );
  });
  onProgress(`concurrency: ${concurrent} agent trajectories in ${agentConcurrent.wallMs.toFixed(0)} ms`);
  const bareConcurrent = await measureStalls(async () => {
    const engine = new InstantEngine({ turns: concurrentTurns, latencyMs });
    return Promise.all(
      Array.from({ length: concurrent }, (_, index) =>
        bareLoop(engine, sandbox, tokenizer, dialect, problemFor(index).text, `bare-${index}`),
      ),
    );
  });
  onProgress(`concurrency: ${concurrent} bare loops in ${bareConcurrent.wallMs.toFixed(0)} ms`);
  const finishReasons: Partial<Record<TrajectoryFinishReason, number>> = {};
  for (const trajectory of agentConcurrent.result) {
    const reason = trajectory.finish?.reason;
    if (reason !== undefined) finishReasons[reason] = (finishReasons[reason] ?? 0) + 1;
  }

  // The loop alone: as many trajectories, several turns each, no sandbox in the process.
  const loopTurns = lengthCutTurns(tokenizer, memoryTurns, tokensPerTurn);
  const loopOnly = await measureStalls(async () => {
    const engine = new InstantEngine({ turns: loopTurns, latencyMs });
    const budgets = { maxTotalTokens: 1_000_000, maxNewTokensPerTurn: tokensPerTurn };
    return Promise.all(
      Array.from({ length: concurrent }, (_, index) =>
        runAgent(problemFor(index), { ...base, engine, budgets }),
      ),
    );
  });
  onProgress(`concurrency: ${concurrent} trajectories without code in ${loopOnly.wallMs.toFixed(0)} ms`);

  // Phase 3: memory held per trajectory in flight, all parked at their last turn.
  const memory = await heapPerTrajectory({
    ...base,
    problem,
    tokenizer,
    concurrent,
    tokensPerTurn,
    memoryTurns,
  });

  const overheadQuantiles = quantiles(overhead);
  const baselineQuantiles = quantiles(baseline);
  return {
    overheadPerTurnMs: overheadQuantiles,
    baselineOverheadPerTurnMs: baselineQuantiles,
    ratioP50: baselineQuantiles.p50 > 0 ? overheadQuantiles.p50 / baselineQuantiles.p50 : Number.NaN,
    sandboxCallMs: quantiles(sandboxCalls),
    concurrent: {
      trajectories: concurrent,
      toolCallsPerTrajectory: concurrentToolCalls,
      wallMs: agentConcurrent.wallMs,
      maxEventLoopStallMs: agentConcurrent.maxStallMs,
      p99EventLoopDelayMs: agentConcurrent.p99DelayMs,
      baselineWallMs: bareConcurrent.wallMs,
      baselineMaxEventLoopStallMs: bareConcurrent.maxStallMs,
      baselineP99EventLoopDelayMs: bareConcurrent.p99DelayMs,
      finishReasons,
    },
    loopOnly: {
      trajectories: concurrent,
      turnsPerTrajectory: memoryTurns,
      wallMs: loopOnly.wallMs,
      maxEventLoopStallMs: loopOnly.maxStallMs,
      p99EventLoopDelayMs: loopOnly.p99DelayMs,
    },
    memory,
    targets: {
      overheadP50Ms: 0.5,
      maxStallMs: 50,
      overheadMet: overheadQuantiles.p50 <= 0.5,
      stallMet: loopOnly.maxStallMs <= 50,
    },
  };
}

/** Latencies spread evenly over 0..`maxMs` in a fixed pseudo-random order; null for none. */
function spreadLatency(maxMs: number): (() => number) | undefined {
  if (maxMs <= 0) return undefined;
  let state = 12345;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return (state / 2147483648) * maxMs;
  };
}

/** Runs `work` with the event-loop delay monitored; the largest delay is the worst stall. */
async function measureStalls<T>(
  work: () => Promise<T>,
): Promise<{ result: T; wallMs: number; maxStallMs: number; p99DelayMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const started = performance.now();
  const result = await work();
  const wallMs = performance.now() - started;
  // A stall is recorded when the delayed sampling timer finally runs: let it run once more.
  await new Promise((resolve) => setTimeout(resolve, 20));
  histogram.disable();
  const finite = (ns: number) => (Number.isFinite(ns) && histogram.count > 0 ? ns / 1e6 : 0);
  return { result, wallMs, maxStallMs: finite(histogram.max), p99DelayMs: finite(histogram.percentile(99)) };
}

/**
 * Heap retained per trajectory in flight: `concurrent` trajectories of `memoryTurns` turns
 * (cut by length, no code) are all held before their last engine call, then a full
 * collection runs and the heap is compared with before they started.
 */
async function heapPerTrajectory(options: {
  problem: { id: string; text: string };
  tokenizer: Tokenizer;
  sandbox: SandboxProvider;
  dialect: Dialect;
  concurrent: number;
  tokensPerTurn: number;
  memoryTurns: number;
}): Promise<{ trajectories: number; contextTokens: number; heapPerTrajectoryBytes: number | null }> {
  const { problem, tokenizer, sandbox, dialect, concurrent, tokensPerTurn, memoryTurns } = options;
  const turns = lengthCutTurns(tokenizer, memoryTurns, tokensPerTurn);
  const contextTokens =
    tokenizer.encode(problem.text).length +
    turns.reduce((sum, turn) => sum + (turn.tokenIds?.length ?? 0), 0);
  const collect = garbageCollector();
  if (collect === null) return { trajectories: concurrent, contextTokens, heapPerTrajectoryBytes: null };
  const inner = new InstantEngine({ turns });
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let waiting = 0;
  let allWaiting: () => void = () => {};
  const everyoneWaits = new Promise<void>((resolve) => {
    allWaiting = resolve;
  });
  const calls = new Map<string, number>();
  const engine: Engine = {
    name: 'instant (held at the last turn)',
    async generate(request) {
      const key = request.sessionId ?? '';
      const call = calls.get(key) ?? 0;
      calls.set(key, call + 1);
      if (call === turns.length - 1) {
        waiting += 1;
        if (waiting === concurrent) allWaiting();
        await gate;
      }
      return inner.generate(request);
    },
  };
  collect();
  const before = process.memoryUsage().heapUsed;
  const running = Promise.all(
    Array.from({ length: concurrent }, (_, sample) =>
      runAgent(problem, {
        engine,
        tokenizer,
        sandbox,
        dialect,
        sample,
        prompt: problemOnlyPrompt,
        budgets: { maxTotalTokens: 1_000_000, maxNewTokensPerTurn: tokensPerTurn },
      }),
    ),
  );
  await everyoneWaits;
  collect();
  const after = process.memoryUsage().heapUsed;
  release();
  await running;
  return {
    trajectories: concurrent,
    contextTokens,
    heapPerTrajectoryBytes: Math.max(0, (after - before) / concurrent),
  };
}

/** Turns of prose cut by the token limit, then an answer with EOS. */
function lengthCutTurns(tokenizer: Tokenizer, count: number, tokensPerTurn: number): GenerateResult[] {
  const prose = trimToTokens(
    tokenizer,
    'we try the next case and compare the sums. '.repeat(200),
    tokensPerTurn,
  );
  const turns: GenerateResult[] = [];
  for (let turn = 0; turn < count - 1; turn++) {
    const ids = tokenizer.encode(prose);
    turns.push({
      tokenIds: ids,
      text: prose,
      logprobs: ids.map(() => -0.5),
      finishReason: 'length',
      matchedStop: null,
      policyVersion: 0,
    });
  }
  const answer = 'The answer is \\boxed{42}.';
  const ids = tokenizer.encode(answer);
  if (tokenizer.eosTokenId !== null) ids.push(tokenizer.eosTokenId);
  turns.push({
    tokenIds: ids,
    text: answer,
    logprobs: ids.map(() => -0.5),
    finishReason: 'stop',
    matchedStop: null,
    policyVersion: 0,
  });
  return turns;
}

/** Per-turn overheads from the event stream: wall time minus engine and sandbox time. */
function turnRecorder() {
  const turnStarts: number[] = [];
  const engineMs: number[] = [];
  const toolByTurn: number[] = [];
  const toolMs: number[] = [];
  let finishedAt = 0;
  let turn = -1;
  return {
    toolMs,
    onEvent(event: AgentEvent) {
      const now = performance.now();
      if (event.type === 'turn-start') {
        turn = event.turn;
        turnStarts[turn] = now;
        toolByTurn[turn] = 0;
      } else if (event.type === 'turn-end') engineMs[event.turn] = event.engineMs;
      else if (event.type === 'tool-result') {
        toolByTurn[turn] = (toolByTurn[turn] ?? 0) + event.toolCall.ms;
        toolMs.push(event.toolCall.ms);
      } else if (event.type === 'trajectory-finish') {
        finishedAt = now;
        // Sandbox time outside the calls (closing the session) belongs to the last turn.
        const callsMs = event.trajectory.toolCalls.reduce((sum, call) => sum + call.ms, 0);
        toolByTurn[turn] = (toolByTurn[turn] ?? 0) + Math.max(0, event.trajectory.timing.toolMs - callsMs);
      }
    },
    overheads(): number[] {
      return turnStarts.map((start, index) => {
        const end = turnStarts[index + 1] ?? finishedAt;
        return end - start - (engineMs[index] ?? 0) - (toolByTurn[index] ?? 0);
      });
    },
  };
}

/**
 * The baseline: the same engine calls and sandbox calls with nothing else, the least any
 * loop must do (append ids, run the code, tokenize its output). Returns per-turn overheads.
 */
async function bareLoop(
  engine: InstantEngine,
  sandbox: SandboxProvider,
  tokenizer: Tokenizer,
  dialect: Dialect,
  problemText: string,
  sessionId = 'bare',
): Promise<number[]> {
  const ids = tokenizer.encode(problemText);
  let session: SandboxSession | null = null;
  const overheads: number[] = [];
  try {
    for (let turn = 0; ; turn++) {
      const start = performance.now();
      const engineStart = performance.now();
      const result = await engine.generate({
        promptTokenIds: ids,
        maxNewTokens: 100_000,
        temperature: 1,
        topP: 1,
        stop: [...dialect.stopStrings],
        sessionId,
      });
      const engineMs = performance.now() - engineStart;
      for (const id of result.tokenIds ?? []) ids.push(id);
      let toolMs = 0;
      if (result.matchedStop !== null) {
        const code = benchCode(turn);
        const toolStart = performance.now();
        session ??= await sandbox.openSession();
        const outcome = await session.execute(code);
        toolMs = performance.now() - toolStart;
        const text = outcome.status === 'ok' ? outcome.stdout : outcome.status;
        for (const id of tokenizer.encode(text)) ids.push(id);
      }
      overheads.push(performance.now() - start - engineMs - toolMs);
      if (result.matchedStop === null) break;
    }
  } finally {
    await session?.close();
  }
  return overheads;
}

function quantiles(values: readonly number[]): Quantiles {
  if (values.length === 0) return { p50: Number.NaN, p99: Number.NaN, mean: Number.NaN, count: 0 };
  const sorted = ascending(values);
  const mean = sorted.reduce((sum, value) => sum + value, 0) / sorted.length;
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), mean, count: sorted.length };
}

/** A way to force a full collection (for retained-memory figures), or null where V8 refuses. */
function garbageCollector(): (() => void) | null {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    return typeof gc === 'function' ? () => (gc as () => void)() : null;
  } catch {
    return null;
  }
}
