/**
 * `agentmath bench sandbox`: latency and throughput of the sandbox over HTTP on loopback, with
 * the naive baseline (a fresh `python3 -c` that imports SymPy per call) measured in the same
 * run. Figures: p50/p99 of a trivial statement in a warm session, of a SymPy snippet (factor +
 * solve), of acquiring a new session from the warm pool; calls/s at concurrency 8 and 32; idle
 * memory per warm worker; the event-loop stalls of a burst of sessions opened and closed in
 * this process (a new jailed worker each), beside the same process idle for as long. The SymPy calls and the baseline's are interleaved, with no worker
 * starting in the background, so both see the same machine (a shared one is noisy).
 */

import { spawn } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { type LatencySummary, summarizeLatency } from '../sandbox/latency-summary.ts';
import { createLocalSandbox } from '../sandbox/local-sandbox-pool.ts';
import { SandboxClient } from '../sandbox/sandbox-client.ts';
import { startSandboxServer } from '../sandbox/sandbox-server.ts';
import type { SandboxSession } from '../sandbox/types.ts';
import { jailPython } from '../shared/python-environments.ts';

export type SandboxBenchOptions = {
  trivialCalls?: number;
  sympyCalls?: number;
  sessionAcquisitions?: number;
  /** Fresh sessions whose first SymPy call is timed (sympy's lazy imports and caches are cold). */
  sympyFirstCalls?: number;
  baselineCalls?: number;
  throughputSeconds?: number;
  concurrencies?: number[];
  /** Sessions opened, used once and closed at once in the in-process pool (event-loop stalls). */
  churnSessions?: number;
  pythonPath?: string;
  log?: (line: string) => void;
};

export type SandboxBenchResult = {
  machine: { cores: number; cgroups: boolean };
  trivialCallHttp: LatencySummary;
  sympySnippetHttp: LatencySummary;
  /** The same calls timed inside the runner: the cost of the SymPy code itself. */
  sympySnippetCodeOnly: LatencySummary;
  /** The snippet as the first call of a fresh session (a new worker per session). */
  sympyFirstCallHttp: LatencySummary;
  newSessionHttp: LatencySummary;
  throughput: Array<{ concurrency: number; callsPerSecond: number; latency: LatencySummary }>;
  baselineFreshPython: LatencySummary;
  sympySpeedupAtP50: number;
  sympyFirstCallSpeedupAtP50: number;
  idleWorkerMemoryBytes: { mean: number; samples: number };
  /** A burst of sessions in the in-process pool, and the same process idle for as long (the machine's noise). */
  sessionChurn: {
    sessions: number;
    wallMs: number;
    maxEventLoopStallMs: number;
    p99EventLoopDelayMs: number;
    idleMaxEventLoopStallMs: number;
    idleP99EventLoopDelayMs: number;
  };
};

/** Runs `work` with the event-loop delay sampled every millisecond; the largest delay is the worst stall. */
async function eventLoopDelays(
  work: () => Promise<unknown>,
): Promise<{ wallMs: number; maxMs: number; p99Ms: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const started = performance.now();
  await work();
  const wallMs = performance.now() - started;
  // A stall is recorded when the delayed sampling timer finally runs: let it run once more.
  await new Promise((resolve) => setTimeout(resolve, 20));
  histogram.disable();
  const ms = (ns: number) => (histogram.count > 0 && Number.isFinite(ns) ? ns / 1e6 : 0);
  return { wallMs, maxMs: ms(histogram.max), p99Ms: ms(histogram.percentile(99)) };
}

const sympySnippet = (k: number) =>
  `import sympy\nx = sympy.symbols('x')\nprint(sympy.factor(x**4 - ${k}**4), sympy.solve(x**2 - ${k}*x - ${k + 1}, x))`;

async function timeEach(count: number, run: (index: number) => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const started = performance.now();
    await run(index);
    samples.push(performance.now() - started);
  }
  return samples;
}

/** Runs a call that must succeed; returns the runner's own time for the code (ms). */
async function expectOk(session: SandboxSession, code: string): Promise<number> {
  const outcome = await session.execute(code);
  if (outcome.status !== 'ok') throw new Error(`bench call failed: ${JSON.stringify(outcome).slice(0, 300)}`);
  return outcome.ms;
}

function runFreshPython(pythonPath: string, code: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(pythonPath, ['-c', code], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`baseline failed: ${stderr}`))));
  });
}

/** Runs the whole benchmark (about a minute on 2 cores) and returns the figures. */
export async function runSandboxBench(options: SandboxBenchOptions = {}): Promise<SandboxBenchResult> {
  const {
    trivialCalls = 500,
    sympyCalls = 60,
    sessionAcquisitions = 30,
    sympyFirstCalls = 8,
    baselineCalls = 12,
    throughputSeconds = 2,
    concurrencies = [8, 32],
    churnSessions = 100,
    pythonPath = jailPython(),
    log = () => {},
  } = options;
  const maxConcurrency = Math.max(...concurrencies, 1);
  const server = await startSandboxServer({
    poolOptions: { maxWorkers: maxConcurrency + 4, warmWorkers: 4, maxConcurrentStarts: 2 },
    log,
  });
  const client = new SandboxClient({ url: server.url });
  const waitForWarm = async () => {
    while (server.pool.stats().idleWorkers < 4) await new Promise((resolve) => setTimeout(resolve, 20));
  };
  // No worker preloading SymPy in the background: it would slow whichever side runs beside it.
  const waitForQuiet = async () => {
    while (server.pool.stats().idleWorkers < 4 || server.pool.stats().startingWorkers > 0)
      await new Promise((resolve) => setTimeout(resolve, 20));
  };
  try {
    log('bench: idle memory, trivial calls');
    await waitForWarm();
    const memory = server.pool.idleWorkerMemory();
    const session = await client.openSession();
    await expectOk(session, 'x = 0');
    const trivial = await timeEach(trivialCalls, () => expectOk(session, 'x = x + 1'));

    log('bench: SymPy snippet, interleaved with the baseline (fresh python3 -c with import sympy per call)');
    await waitForQuiet();
    await expectOk(session, sympySnippet(1));
    const sympyInRunner: number[] = [];
    const sympy: number[] = [];
    const baseline: number[] = [];
    const baselineEvery = Math.max(1, Math.floor(sympyCalls / Math.max(1, baselineCalls)));
    for (let index = 0; index < sympyCalls || baseline.length < baselineCalls; index += 1) {
      if (index < sympyCalls) {
        const started = performance.now();
        sympyInRunner.push(await expectOk(session, sympySnippet(index + 2)));
        sympy.push(performance.now() - started);
      }
      if (index % baselineEvery === 0 && baseline.length < baselineCalls) {
        const started = performance.now();
        await runFreshPython(pythonPath, sympySnippet(index + 2));
        baseline.push(performance.now() - started);
      }
    }
    await session.close();

    log('bench: new sessions');
    const acquisitions: number[] = [];
    const firstCalls: number[] = [];
    for (let index = 0; index < Math.max(sessionAcquisitions, sympyFirstCalls); index += 1) {
      await waitForWarm();
      const started = performance.now();
      const fresh = await client.openSession();
      if (index < sessionAcquisitions) acquisitions.push(performance.now() - started);
      if (index < sympyFirstCalls) {
        await waitForQuiet();
        const callStarted = performance.now();
        await expectOk(fresh, sympySnippet(index + 2));
        firstCalls.push(performance.now() - callStarted);
      }
      await fresh.close();
    }

    const throughput: SandboxBenchResult['throughput'] = [];
    for (const concurrency of concurrencies) {
      log(`bench: throughput at concurrency ${concurrency}`);
      await waitForWarm();
      const sessions = await Promise.all(Array.from({ length: concurrency }, () => client.openSession()));
      await Promise.all(sessions.map((each) => expectOk(each, 'y = 0')));
      await waitForWarm(); // refills must not steal CPU from the measured window
      const latencies: number[] = [];
      const deadline = performance.now() + throughputSeconds * 1000;
      const started = performance.now();
      await Promise.all(
        sessions.map(async (each) => {
          while (performance.now() < deadline) {
            const callStarted = performance.now();
            await expectOk(each, 'y = y + 1');
            latencies.push(performance.now() - callStarted);
          }
        }),
      );
      const elapsedSeconds = (performance.now() - started) / 1000;
      throughput.push({
        concurrency,
        callsPerSecond: latencies.length / elapsedSeconds,
        latency: summarizeLatency(latencies),
      });
      await Promise.all(sessions.map((each) => each.close()));
    }

    log(`bench: ${churnSessions} sessions opened, used and closed at once, in process`);
    await waitForQuiet();
    // Its own pool, sized as the agent loop's: 8 workers, nothing preloaded, so starts dominate.
    const churnPool = createLocalSandbox(
      { maxWorkers: 8, warmWorkers: 4, preload: [], acquireTimeoutMs: 600_000 },
      { log },
    );
    let churn: Awaited<ReturnType<typeof eventLoopDelays>>;
    let idle: Awaited<ReturnType<typeof eventLoopDelays>>;
    try {
      await churnPool.ready();
      churn = await eventLoopDelays(() =>
        Promise.all(
          Array.from({ length: churnSessions }, async () => {
            const each = await churnPool.openSession();
            await expectOk(each, 'x = 1');
            await each.close();
          }),
        ),
      );
      await churnPool.ready();
      idle = await eventLoopDelays(() => new Promise((resolve) => setTimeout(resolve, churn.wallMs)));
    } finally {
      await churnPool.close();
    }

    const sympySummary = summarizeLatency(sympy);
    const baselineSummary = summarizeLatency(baseline);
    return {
      machine: {
        cores: (await import('node:os')).availableParallelism(),
        cgroups: server.pool.cgroupsEnabled,
      },
      trivialCallHttp: summarizeLatency(trivial),
      sympySnippetHttp: sympySummary,
      sympySnippetCodeOnly: summarizeLatency(sympyInRunner),
      sympyFirstCallHttp: summarizeLatency(firstCalls),
      newSessionHttp: summarizeLatency(acquisitions),
      throughput,
      baselineFreshPython: baselineSummary,
      sympySpeedupAtP50: baselineSummary.p50Ms / Math.max(sympySummary.p50Ms, 1e-6),
      sympyFirstCallSpeedupAtP50: baselineSummary.p50Ms / Math.max(summarizeLatency(firstCalls).p50Ms, 1e-6),
      sessionChurn: {
        sessions: churnSessions,
        wallMs: churn.wallMs,
        maxEventLoopStallMs: churn.maxMs,
        p99EventLoopDelayMs: churn.p99Ms,
        idleMaxEventLoopStallMs: idle.maxMs,
        idleP99EventLoopDelayMs: idle.p99Ms,
      },
      idleWorkerMemoryBytes: {
        mean: memory.length ? memory.reduce((sum, value) => sum + value, 0) / memory.length : 0,
        samples: memory.length,
      },
    };
  } finally {
    await client.close();
    await server.close();
  }
}

/** The result as a plain-text table. */
export function formatSandboxBench(result: SandboxBenchResult): string {
  const row = (name: string, summary: LatencySummary, extra = '') =>
    `${name.padEnd(44)} ${summary.p50Ms.toFixed(2).padStart(9)} ${summary.p99Ms.toFixed(2).padStart(9)} ${String(summary.count).padStart(6)}  ${extra}`;
  const lines = [
    `${'measurement'.padEnd(44)} ${'p50 ms'.padStart(9)} ${'p99 ms'.padStart(9)} ${'n'.padStart(6)}`,
    row('trivial statement, warm session, HTTP', result.trivialCallHttp),
    row('SymPy factor + solve, warm session, HTTP', result.sympySnippetHttp),
    row('  of which the SymPy code itself (in runner)', result.sympySnippetCodeOnly),
    row("SymPy snippet as a fresh session's first call", result.sympyFirstCallHttp),
    row('baseline: fresh python3 -c + import sympy', result.baselineFreshPython),
    row('new session from the warm pool, HTTP', result.newSessionHttp),
    ...result.throughput.map((each) =>
      row(
        `trivial calls at concurrency ${each.concurrency}`,
        each.latency,
        `${each.callsPerSecond.toFixed(0)} calls/s`,
      ),
    ),
    '',
    `SymPy snippet speed-up over the baseline at p50: ${result.sympySpeedupAtP50.toFixed(1)}x ` +
      `(as a fresh session's first call: ${result.sympyFirstCallSpeedupAtP50.toFixed(1)}x)`,
    `${result.sessionChurn.sessions} sessions opened, used and closed at once in process: ` +
      `max event-loop stall ${result.sessionChurn.maxEventLoopStallMs.toFixed(1)} ms, p99 delay ${result.sessionChurn.p99EventLoopDelayMs.toFixed(1)} ms ` +
      `(${(result.sessionChurn.wallMs / 1000).toFixed(1)} s; the process idle as long: ${result.sessionChurn.idleMaxEventLoopStallMs.toFixed(1)} / ${result.sessionChurn.idleP99EventLoopDelayMs.toFixed(1)} ms)`,
    `idle memory per warm worker: ${(result.idleWorkerMemoryBytes.mean / 1024 / 1024).toFixed(1)} MiB (${result.machine.cgroups ? 'cgroup charge' : 'RSS'}, ${result.idleWorkerMemoryBytes.samples} workers)`,
    `machine: ${result.machine.cores} cores; figures are noisy on a shared machine`,
  ];
  return `${lines.join('\n')}\n`;
}
