/**
 * `agentmath bench sandbox`: latency and throughput of the sandbox over HTTP on loopback, with
 * the naive baseline (a fresh `python3 -c` that imports SymPy per call) measured in the same
 * run. Figures: p50/p99 of a trivial statement in a warm session, of a SymPy snippet (factor +
 * solve), of acquiring a new session from the warm pool; calls/s at concurrency 8 and 32; idle
 * memory per warm worker.
 */
import { spawn } from 'node:child_process';
import { type LatencySummary, summarizeLatency } from './latency-summary.ts';
import { SandboxClient } from './sandbox-client.ts';
import { startSandboxServer } from './sandbox-server.ts';
import type { SandboxSession } from './types.ts';

export type SandboxBenchOptions = {
  trivialCalls?: number;
  sympyCalls?: number;
  sessionAcquisitions?: number;
  baselineCalls?: number;
  throughputSeconds?: number;
  concurrencies?: number[];
  pythonPath?: string;
  log?: (line: string) => void;
};

export type SandboxBenchResult = {
  machine: { cores: number; cgroups: boolean };
  trivialCallHttp: LatencySummary;
  sympySnippetHttp: LatencySummary;
  /** The same calls timed inside the runner: the cost of the SymPy code itself. */
  sympySnippetCodeOnly: LatencySummary;
  newSessionHttp: LatencySummary;
  throughput: Array<{ concurrency: number; callsPerSecond: number; latency: LatencySummary }>;
  baselineFreshPython: LatencySummary;
  sympySpeedupAtP50: number;
  idleWorkerMemoryBytes: { mean: number; samples: number };
};

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
    baselineCalls = 12,
    throughputSeconds = 2,
    concurrencies = [8, 32],
    pythonPath = '/usr/bin/python3',
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
  try {
    log('bench: idle memory, trivial calls');
    await waitForWarm();
    const memory = server.pool.idleWorkerMemory();
    const session = await client.openSession();
    await expectOk(session, 'x = 0');
    const trivial = await timeEach(trivialCalls, () => expectOk(session, 'x = x + 1'));

    log('bench: SymPy snippet');
    await expectOk(session, sympySnippet(1));
    const sympyInRunner: number[] = [];
    const sympy = await timeEach(sympyCalls, async (index) => {
      sympyInRunner.push(await expectOk(session, sympySnippet(index + 2)));
    });
    await session.close();

    log('bench: new sessions');
    const acquisitions: number[] = [];
    for (let index = 0; index < sessionAcquisitions; index += 1) {
      await waitForWarm();
      const started = performance.now();
      const fresh = await client.openSession();
      acquisitions.push(performance.now() - started);
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

    log('bench: baseline (fresh python3 -c with import sympy per call)');
    const baseline = await timeEach(baselineCalls, (index) =>
      runFreshPython(pythonPath, sympySnippet(index + 2)),
    );

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
      newSessionHttp: summarizeLatency(acquisitions),
      throughput,
      baselineFreshPython: baselineSummary,
      sympySpeedupAtP50: baselineSummary.p50Ms / Math.max(sympySummary.p50Ms, 1e-6),
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
    `SymPy snippet speed-up over the baseline at p50: ${result.sympySpeedupAtP50.toFixed(1)}x`,
    `idle memory per warm worker: ${(result.idleWorkerMemoryBytes.mean / 1024 / 1024).toFixed(1)} MiB (${result.machine.cgroups ? 'cgroup charge' : 'RSS'}, ${result.idleWorkerMemoryBytes.samples} workers)`,
    `machine: ${result.machine.cores} cores; figures are noisy on a shared machine`,
  ];
  return `${lines.join('\n')}\n`;
}
