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
 *    (`perf_hooks.monitorEventLoopDelay`) and the heap retained per trajectory in flight.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Tokenizer } from '../engine/tokenizer.ts';
import type { GenerateResult } from '../engine/types.ts';
import type { Dialect } from '../protocol/dialect.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import type { TrajectoryFinishReason } from '../trajectory/trajectory.ts';
import type { AgentEvent } from './agent-event.ts';
import { InstantEngine } from './instant-engine.ts';
import { problemOnlyPrompt } from './prompt-builder.ts';
import { runAgent } from './run-agent.ts';

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
    wallMs: number;
    maxEventLoopStallMs: number;
    p99EventLoopDelayMs: number;
    heapPerTrajectoryBytes: number | null;
    finishReasons: Partial<Record<TrajectoryFinishReason, number>>;
  };
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

  // Phase 2: many trajectories at once.
  const concurrentTurns = benchTurns(dialect, tokenizer, concurrentToolCalls, tokensPerTurn);
  const engine = new InstantEngine({ turns: concurrentTurns });
  const collect = garbageCollector();
  collect?.();
  const heapBefore = process.memoryUsage().heapUsed;
  let heapPerTrajectory: number | null = null;
  let firstTurnsDone = 0;
  let stallBeforeGc = 0;
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  const started = performance.now();
  const onEvent = (event: AgentEvent) => {
    if (event.type !== 'turn-end' || event.turn !== 0) return;
    firstTurnsDone += 1;
    // Every trajectory is in flight now (holding its state, waiting for its tool call).
    if (firstTurnsDone === concurrent && collect !== null) {
      stallBeforeGc = histogram.max;
      collect();
      heapPerTrajectory = Math.max(0, (process.memoryUsage().heapUsed - heapBefore) / concurrent);
      histogram.reset(); // the forced collection's own pause is not the loop's stall
    }
  };
  const finished = await Promise.all(
    Array.from({ length: concurrent }, (_, sample) =>
      runAgent(problem, {
        ...base,
        engine,
        sample,
        onEvent,
        budgets: { ...base.budgets, maxToolCalls: concurrentToolCalls + 1 },
      }),
    ),
  );
  const wallMs = performance.now() - started;
  histogram.disable();
  const maxStallNs = Math.max(stallBeforeGc, histogram.max);
  const finishReasons: Partial<Record<TrajectoryFinishReason, number>> = {};
  for (const trajectory of finished) {
    const reason = trajectory.finish?.reason;
    if (reason !== undefined) finishReasons[reason] = (finishReasons[reason] ?? 0) + 1;
  }
  const overheadQuantiles = quantiles(overhead);
  const baselineQuantiles = quantiles(baseline);
  const maxEventLoopStallMs = maxStallNs / 1e6;
  return {
    overheadPerTurnMs: overheadQuantiles,
    baselineOverheadPerTurnMs: baselineQuantiles,
    ratioP50: baselineQuantiles.p50 > 0 ? overheadQuantiles.p50 / baselineQuantiles.p50 : Number.NaN,
    sandboxCallMs: quantiles(sandboxCalls),
    concurrent: {
      trajectories: concurrent,
      wallMs,
      maxEventLoopStallMs,
      p99EventLoopDelayMs: histogram.percentile(99) / 1e6,
      heapPerTrajectoryBytes: heapPerTrajectory,
      finishReasons,
    },
    targets: {
      overheadP50Ms: 0.5,
      maxStallMs: 50,
      overheadMet: overheadQuantiles.p50 <= 0.5,
      stallMet: maxEventLoopStallMs <= 50,
    },
  };
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
      } else if (event.type === 'trajectory-finish') finishedAt = now;
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
): Promise<number[]> {
  const ids = tokenizer.encode(problemText);
  const session = await sandbox.openSession();
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
        sessionId: 'bare',
      });
      const engineMs = performance.now() - engineStart;
      for (const id of result.tokenIds ?? []) ids.push(id);
      let toolMs = 0;
      if (result.matchedStop !== null) {
        const code = benchCode(turn);
        const toolStart = performance.now();
        const outcome = await session.execute(code);
        toolMs = performance.now() - toolStart;
        const text = outcome.status === 'ok' ? outcome.stdout : outcome.status;
        for (const id of tokenizer.encode(text)) ids.push(id);
      }
      overheads.push(performance.now() - start - engineMs - toolMs);
      if (result.matchedStop === null) break;
    }
  } finally {
    await session.close();
  }
  return overheads;
}

function quantiles(values: readonly number[]): Quantiles {
  if (values.length === 0) return { p50: Number.NaN, p99: Number.NaN, mean: Number.NaN, count: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  const mean = sorted.reduce((sum, value) => sum + value, 0) / sorted.length;
  return { p50: at(0.5), p99: at(0.99), mean, count: sorted.length };
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
