/**
 * Calibration against reality: fit the cost model to the embedded worker, run a real job on
 * it (held-out `arith` problems through the agent loop, `concurrency` at once, code in the
 * local jailed sandbox), then simulate the same job — the same trajectories (response
 * lengths, tool-call positions and output lengths taken from the real records), each tool
 * call with its measured latency, the fitted cost model, the worker's batch
 * limit and no prefix cache (the worker has none) — and compare the predicted wall time with
 * the measured one. Both runs go through the same pool of agent loops.
 */
import { problemOnlyPrompt } from '../agent/prompt-builder.ts';
import { runAgent } from '../agent/run-agent.ts';
import { createByteLevelTokenizer } from '../engine/byte-level-tokenizer.ts';
import { startEmbeddedEngine } from '../engine/local/embedded-engine.ts';
import type { Tokenizer } from '../engine/tokenizer.ts';
import type { Engine } from '../engine/types.ts';
import { getDialect } from '../protocol/dialects.ts';
import { createLocalSandbox } from '../sandbox/local-sandbox-pool.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import { arithEvalProblems } from '../tasks/arith/index.ts';
import { createSeededRandom } from '../tasks/seeded-random.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import type { Distribution } from './distribution.ts';
import { calibrateEngine, type EngineCalibration } from './engine-calibration.ts';
import type { CostModel } from './engine-cost-model.ts';
import { SimulatedEngine } from './simulated-engine.ts';
import { problemHeader, SimulatedPolicy } from './simulated-policy.ts';
import { SimulatedSandbox } from './simulated-sandbox.ts';
import type { TrajectoryPlan } from './trajectory-plan.ts';
import { VirtualClock } from './virtual-clock.ts';

export type CalibrationOptions = {
  /** The embedded model folder. */
  model: string;
  /** Held-out arith problems in the real job (default 96). */
  problems?: number;
  /** Trajectories at once (default 32). */
  concurrency?: number;
  /**
   * Sandbox workers in the real job (default: `concurrency`, one per trajectory). A local
   * session holds its worker for the whole trajectory, so with fewer workers a trajectory's
   * first call also waits for a session; that wait is part of the call's measured time, which
   * the simulation replays.
   */
  sandboxWorkers?: number;
  onProgress?: (line: string) => void;
};

export type CalibrationReport = {
  model: string;
  problems: number;
  concurrency: number;
  sandboxWorkers: number;
  fit: EngineCalibration;
  measuredSeconds: number;
  predictedSeconds: number;
  /** (predicted − measured) / measured. */
  relativeError: number;
  modelTokens: number;
  toolCalls: number;
  /** Mean measured tool-call time (session start included for first calls), ms. */
  toolMsMean: number;
};

const MAX_TOOL_CALLS = 4;
const WORKER_SLOTS = 64;

export async function runCalibration(options: CalibrationOptions): Promise<CalibrationReport> {
  const {
    model,
    problems: count = 96,
    concurrency = 32,
    sandboxWorkers = concurrency,
    onProgress = () => {},
  } = options;
  const embedded = await startEmbeddedEngine({ model, maxConcurrency: concurrency });
  const contextTokens = embedded.contextTokens ?? 768;
  let fit: EngineCalibration;
  let measuredMs: number;
  let trajectories: Trajectory[];
  const problems = arithEvalProblems({ count });
  try {
    fit = await calibrateEngine({ url: embedded.worker.url, onProgress });
    onProgress(`real job: ${count} arith problems, ${concurrency} at once`);
    const sandbox = createLocalSandbox({
      maxWorkers: sandboxWorkers,
      warmWorkers: sandboxWorkers,
      preload: [],
      acquireTimeoutMs: 600_000,
    });
    try {
      const started = performance.now();
      trajectories = await agentPool(
        problems.map((problem) => ({ id: problem.id, text: problem.problem })),
        { concurrency, engine: embedded.engine, sandbox, contextTokens, tokenizer: embedded.tokenizer },
      );
      measuredMs = performance.now() - started;
    } finally {
      await sandbox.close();
    }
  } finally {
    await embedded.close();
  }
  const { ms: predictedMs } = await simulateJob(trajectories, {
    costModel: fit.costModel,
    concurrency,
    contextTokens,
  });
  const toolMs = trajectories.flatMap((trajectory) => trajectory.toolCalls.map((call) => call.ms));
  let modelTokens = 0;
  for (const trajectory of trajectories)
    for (const segment of trajectory.segments)
      if (segment.kind === 'model') modelTokens += segment.tokenIds?.length ?? 0;
  return {
    model,
    problems: count,
    concurrency,
    sandboxWorkers,
    fit,
    measuredSeconds: measuredMs / 1000,
    predictedSeconds: predictedMs / 1000,
    relativeError: (predictedMs - measuredMs) / measuredMs,
    modelTokens,
    toolCalls: toolMs.length,
    toolMsMean: toolMs.reduce((sum, ms) => sum + ms, 0) / Math.max(1, toolMs.length),
  };
}

type PoolParts = {
  concurrency: number;
  engine: Engine;
  sandbox: SandboxProvider;
  contextTokens: number;
  tokenizer: Tokenizer;
};

/** `concurrency` agent loops taking problems in order; greedy, as the held-out evaluation runs. */
async function agentPool(problems: { id: string; text: string }[], parts: PoolParts): Promise<Trajectory[]> {
  const results: Trajectory[] = new Array(problems.length);
  let next = 0;
  const worker = async () => {
    while (next < problems.length) {
      const index = next++;
      results[index] = await runAgent(problems[index] as { id: string; text: string }, {
        engine: parts.engine,
        tokenizer: parts.tokenizer,
        sandbox: parts.sandbox,
        dialect: getDialect('tags'),
        prompt: problemOnlyPrompt,
        budgets: {
          maxTotalTokens: parts.contextTokens,
          maxToolCalls: MAX_TOOL_CALLS,
          maxNewTokensPerTurn: parts.contextTokens,
        },
        sampling: { temperature: 0, topP: 1, seed: 0 },
        createId: () => `calibration-${index}`,
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(parts.concurrency, problems.length) }, worker));
  return results;
}

/**
 * The plan a real trajectory followed: its model tokens, where its calls came, their output
 * lengths and their measured latencies (replayed as they were).
 */
export function planOf(trajectory: Trajectory, framingTokens: number): TrajectoryPlan {
  let modelTokens = 0;
  const calls: { before: number; outputTokens: number; latencyMs: number }[] = [];
  for (const segment of trajectory.segments) {
    const tokens = segment.tokenIds?.length ?? 0;
    if (segment.kind === 'model') modelTokens += tokens;
    else {
      const latencyMs = trajectory.toolCalls[segment.toolCallIndex]?.ms ?? 0;
      calls.push({ before: modelTokens, outputTokens: Math.max(1, tokens - framingTokens), latencyMs });
    }
  }
  return {
    responseTokens: modelTokens,
    toolCalls: calls.map((call) => ({
      at: modelTokens === 0 ? 0 : call.before / modelTokens,
      outputTokens: call.outputTokens,
      latencyMs: call.latencyMs,
    })),
    answer: trajectory.answer ?? '',
  };
}

/** Tokens the tags dialect adds around a tool's output (rendering an empty output). */
function framingTokens(): number {
  const rendered = getDialect('tags').renderToolResult(
    { status: 'ok', stdout: '', stderr: '', ms: 0 },
    { stopTrimmed: false },
  );
  return rendered.length;
}

/** Quantiles of measured values as a distribution. */
function empirical(values: number[]): Distribution {
  if (values.length === 0) return { constant: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 1) return { constant: sorted[0] as number };
  return {
    quantiles: sorted.map((value, index) => [index / (sorted.length - 1), value] as [number, number]),
  };
}

export async function simulateJob(
  trajectories: Trajectory[],
  options: { costModel: CostModel; concurrency: number; contextTokens: number },
): Promise<{ ms: number; trajectories: Trajectory[] }> {
  const framing = framingTokens();
  const plans = trajectories.map((trajectory) => planOf(trajectory, framing));
  const clock = new VirtualClock();
  const tokenizer = createByteLevelTokenizer();
  const policy = new SimulatedPolicy({
    planFor: (problem) => plans[problem] as TrajectoryPlan,
    decode: (ids) => tokenizer.decode(ids),
  });
  const engine = new SimulatedEngine({
    name: 'simulated-embedded',
    clock,
    policy,
    costModel: options.costModel,
    kvCapacityTokens: WORKER_SLOTS * options.contextTokens,
    maxRunningRequests: WORKER_SLOTS,
    prefixCaching: false,
  });
  // Each call is replayed with its measured time, which already holds any wait for a real
  // worker: the simulated sandbox has one worker per agent loop, so nothing waits twice.
  const sandbox = new SimulatedSandbox({
    clock,
    workers: options.concurrency,
    latencyMs: empirical(trajectories.flatMap((trajectory) => trajectory.toolCalls.map((call) => call.ms))),
    random: createSeededRandom('calibration'),
  });
  const problems = trajectories.map((trajectory, index) => {
    const promptTokens = trajectory.prompt.tokenIds?.length ?? trajectory.prompt.text.length;
    const header = `${problemHeader(index)} `;
    // The template adds the same bytes around any problem text: pad the text to the real prompt's length.
    const templateTokens = tokenizer.encode(
      tokenizer.applyChatTemplate([{ role: 'user', content: '' }]),
    ).length;
    return {
      id: `sim-${index}`,
      text: header + 'q'.repeat(Math.max(0, promptTokens - templateTokens - header.length)),
    };
  });
  const simulated = await clock.run(() =>
    agentPool(problems, {
      concurrency: options.concurrency,
      engine,
      sandbox,
      contextTokens: options.contextTokens * 4,
      tokenizer,
    }),
  );
  return { ms: clock.now(), trajectories: simulated };
}
