/**
 * `train rl` on the cluster layout under faults, with real processes: a tiny Qwen3
 * from `model init`, SFT'd on arith tool solutions (shared by every test), trained by RL on two
 * engine replicas and the distributed trainer.
 *
 * - An engine replica killed mid-step: the router sends its work to the other replica, the
 *   step and the run complete, no engine call after the kill is served by the dead replica, and
 *   the weight syncs after it skip it.
 * - The trainer killed: the CLI stops with a message naming the trainer, leaves no process
 *   behind, and `--resume` completes the run with every step recorded once.
 * - The orchestrator killed with SIGKILL: every process it started ends by itself, `--resume`
 *   redoes only the uncommitted step, and the engines start from the committed weights.
 * - A sandbox node killed: the trajectory's next call runs on the other node, its Python state
 *   rebuilt by replay (`TrajectorySession` over `SandboxClusterClient`).
 *
 * Every wait is for an event (a line, a file's content, a process's exit), never for a time.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TrajectorySession } from '../../src/agent/trajectory-session.ts';
import type { Engine } from '../../src/engine/types.ts';
import { readCheckpoint } from '../../src/rollout/index.ts';
import { SandboxClusterClient } from '../../src/sandbox/index.ts';
import { resolveRlConfig, runRl, startRlParts } from '../../src/train/index.ts';
import type { ToolCall } from '../../src/trajectory/trajectory.ts';
import { type CliResult, killAllClis, killGroup, startCli } from '../cli-process.ts';
import { alive, descendantsOf } from '../process-tree.ts';
import { startNodeProcess } from '../sandbox-node-process.ts';

let root: string;
/** The SFT'd Hugging Face model folder every run starts from. */
let model: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'agentmath-rl-faults-'));
  const data = join(root, 'arith.jsonl');
  const commands = [
    ['model', 'init', '--arch', 'qwen3', '--out', join(root, 'init'), '--hidden', '64', '--seed', '1'],
    ['tasks', 'write-arith', '--out', data, '--count', '200', '--levels', '0', '--style', 'tool'],
    [
      ...['train', 'sft', '--model', join(root, 'init'), '--data', data, '--out', join(root, 'sft')],
      ...['--steps', '60', '--batch-size', '16', '--learning-rate', '1e-2', '--warmup-steps', '3'],
      ...['--micro-batch-tokens', '4096', '--checkpoint-every', '60'],
    ],
  ];
  for (const command of commands) {
    const result = await startCli(command, { cwd: root, limitMs: 600_000 }).done;
    expect(result.code, result.stderr).toBe(0);
  }
  model = join(root, 'sft', 'model');
}, 900_000);

afterAll(() => {
  killAllClis();
  rmSync(root, { recursive: true, force: true });
});

const STEPS = 3;

/** The CPU recipe: two replicas, two trainer ranks, rollout one step ahead. */
const rlArgs = (out: string) => [
  ...['train', 'rl', '--model', model, '--levels', '0', '--problems', '64', '--batch-size', '2'],
  ...['--group-size', '4', '--max-tokens', '320', '--max-tool-calls', '2', '--partial-rollouts', '1'],
  ...['--eval-every', '0', '--eval-problems', '2', '--seed', '0', '--steps', String(STEPS)],
  ...['--replicas', '2', '--trainer-procs', '2', '--max-staleness', '1', '--micro-batch-tokens', '1024'],
  ...['--learning-rate', '1e-3', '--checkpoint-every', '1', '--out', out],
];

function jsonLines<T>(path: string): T[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as T);
}

type MetricsRow = { step: number; policyVersion: number };
const metricSteps = (out: string) => jsonLines<MetricsRow>(join(out, 'metrics.jsonl')).map((row) => row.step);
const everyStep = Array.from({ length: STEPS }, (_, step) => step);

/** Resolves once the child's stderr holds a line matching `pattern`; rejects if it ends first. */
function stderrLine(child: ChildProcess, done: Promise<CliResult>, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const match = pattern.exec(seen);
      if (match) {
        child.stderr?.off('data', onData);
        resolve(match[0]);
      }
    };
    child.stderr?.on('data', onData);
    void done.then((result) =>
      reject(new Error(`exited (${result.code ?? result.signal}) before ${pattern}:\n${result.stderr}`)),
    );
  });
}

/** The process's command line, arguments joined by spaces ('' when it is gone). */
function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

/** The live descendants of `pid` with their command lines, to kill what is left at the end. */
function processTree(pid: number): Map<number, string> {
  return new Map(descendantsOf(pid).map((child) => [child, commandLine(child)]));
}

/** Waits (polling /proc) until none of `tree` lives, or gives up; returns those still alive. */
async function stillAliveAfterWaiting(tree: Map<number, string>): Promise<string[]> {
  const pids = [...tree.keys()];
  for (let attempt = 0; attempt < 120 && alive(pids).length > 0; attempt += 1) await sleep(500);
  return alive(pids).map((pid) => `${pid} ${tree.get(pid)}`);
}

/** SIGKILLs those of `tree` still running the same command (a pid may have been reused). */
function killLeftovers(tree: Map<number, string>): void {
  for (const [pid, command] of tree) {
    if (commandLine(pid) !== command) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/** `agentmath engine serve` on a free port; resolves with its URL (the first line it prints). */
async function startEngine(): Promise<{ url: string; child: ChildProcess; done: Promise<CliResult> }> {
  const { child, done } = startCli(['engine', 'serve', '--model', model, '--port', '0'], {
    cwd: root,
    limitMs: 1_200_000,
  });
  const url = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /^(http:\/\/\S+)$/m.exec(seen);
      if (match) resolve(match[1]!);
    });
    void done.then((result) => reject(new Error(`engine serve exited (${result.code}): ${result.stderr}`)));
  });
  return { url, child, done };
}

describe('train rl under faults', () => {
  it('an engine replica killed mid-step: its trajectories continue on the other, every step completes, later syncs skip it', async () => {
    const engines = await Promise.all([startEngine(), startEngine()]);
    const out = join(root, 'engine-killed');
    const config = resolveRlConfig({
      init: model,
      engines: engines.map((engine) => engine.url),
      levels: [0],
      problemPool: 64,
      batchSize: 2,
      groupSize: 4,
      maxTokens: 320,
      maxToolCalls: 2,
      partialRollouts: 1,
      evalEvery: 0,
      evalProblems: 2,
      steps: STEPS,
      trainerProcs: 1,
      maxStaleness: 1,
      microBatchTokens: 1024,
      learningRate: 1e-3,
      sandboxWorkers: 2,
      seed: 0,
    });
    const log: string[] = [];
    const parts = await startRlParts(config, out, (line) => log.push(line));
    // The replica that answers first is killed before its answer is handed on: it holds
    // trajectories then, and each one's next call prefers it (prefix-aware routing).
    let victim: string | null = null;
    let killed = false;
    const servedAfterKill: string[] = [];
    let syncsAfterKill = 0;
    const router = parts.engine;
    const engine: Engine = {
      name: router.name,
      ...(router.replicaStats === undefined ? {} : { replicaStats: () => router.replicaStats!() }),
      generate: async (request, signal) => {
        const startedAfterKill = killed;
        const result = await router.generate(request, signal);
        if (startedAfterKill) servedAfterKill.push(result.replica ?? '?');
        else if (victim === null && result.replica) {
          victim = result.replica;
          const dead = engines.find((each) => each.url === victim)!;
          killGroup(dead.child);
          await dead.done;
          killed = true;
        }
        return result;
      },
    } as Engine;
    try {
      const metrics = await runRl({
        folder: out,
        config,
        resume: false,
        parts: { ...parts, engine },
        onEvent: (event) => {
          if (event.type === 'rl-sync' && killed) syncsAfterKill += 1;
        },
      });
      expect(metrics.map((row) => row.step)).toEqual(everyStep);
    } finally {
      await parts.close();
      for (const each of engines) killGroup(each.child);
    }
    expect(killed).toBe(true);
    expect(metricSteps(out)).toEqual(everyStep);
    // Nothing started after the kill was served by the dead replica, and work went on.
    expect(servedAfterKill.length).toBeGreaterThan(0);
    expect(servedAfterKill).not.toContain(victim);
    type Row = {
      finish: { reason: string };
      segments: { kind: string; step?: number | null; replica?: string | null }[];
    };
    const trajectories = jsonLines<Row>(join(out, 'trajectories.jsonl'));
    const segments = trajectories.flatMap((row) =>
      row.segments.filter((segment) => segment.kind === 'model'),
    );
    // The victim served step 0 before it died; the steps after are served by the other alone.
    expect(segments.some((segment) => segment.step === 0 && segment.replica === victim)).toBe(true);
    const later = segments.filter((segment) => (segment.step ?? 0) > 0);
    expect(later.length).toBeGreaterThan(0);
    expect(later.filter((segment) => segment.replica === victim)).toEqual([]);
    // The agent loop saw no engine error: the router's retry on the other replica hid the loss.
    expect(trajectories.filter((row) => row.finish.reason === 'error')).toEqual([]);
    // Every weight sync after the kill skipped the dead replica.
    const skipped = log.filter((line) => /^weight sync v\d+: .* unreachable, skipped$/.test(line));
    expect(syncsAfterKill).toBeGreaterThan(0);
    expect(skipped.length).toBe(syncsAfterKill);
    for (const line of skipped) expect(line).toContain(victim!);
  }, 900_000);

  it('the trainer killed: the CLI stops naming the trainer, leaves nothing running, and --resume records every step once', async () => {
    const out = join(root, 'trainer-killed');
    const run = startCli(rlArgs(out), { cwd: root, limitMs: 900_000, keepGroupOnExit: true });
    await stderrLine(run.child, run.done, /^step 0:.*$/m);
    const tree = processTree(run.child.pid!);
    try {
      const pids = [...tree.keys()];
      const torchrun = pids.find((pid) => tree.get(pid)!.includes('agentmath_train.torchrun'));
      expect(torchrun, [...tree.values()].join('\n')).toBeDefined();
      const ranks = pids.filter((pid) => / -m agentmath_train /.test(tree.get(pid)!));
      expect(ranks.length).toBeGreaterThan(0);
      // torchrun starts each rank in a session of its own: its group and each rank's are killed.
      for (const leader of [torchrun!, ...ranks]) process.kill(-leader, 'SIGKILL');
      const result = await run.done;
      expect(result.signal, result.stderr).toBeNull();
      expect(result.code, result.stderr).not.toBe(0);
      // The error that ends it names the trainer (its route and address).
      expect(result.stderr.trim().split('\n').at(-1)).toMatch(/^agentmath: \[\w+\] .*trainer/);
      expect(await stillAliveAfterWaiting(tree)).toEqual([]);
    } finally {
      killLeftovers(tree);
    }
    const resumed = await startCli([...rlArgs(out), '--resume'], { cwd: root, limitMs: 900_000 }).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(metricSteps(out)).toEqual(everyStep);
  }, 1_200_000);

  it('the orchestrator killed with SIGKILL: its children end by themselves, --resume redoes only the uncommitted step from the committed weights', async () => {
    const out = join(root, 'orchestrator-killed');
    const run = startCli(rlArgs(out), { cwd: root, limitMs: 900_000, keepGroupOnExit: true });
    const ended = run.done.then(() => true);
    // Killed right after a step commits: the next step's rollout (one step ahead) is under way.
    let committed = 0;
    while (committed === 0 && !(await Promise.race([ended, sleep(200).then(() => false)]))) {
      committed = (await readCheckpoint(out).catch(() => null))?.nextStep ?? 0;
    }
    expect(committed).toBeGreaterThan(0);
    const tree = processTree(run.child.pid!);
    let before: MetricsRow[];
    let nextStep: number;
    try {
      process.kill(run.child.pid!, 'SIGKILL');
      const result = await run.done;
      expect(result.signal).toBe('SIGKILL');
      expect(tree.size).toBeGreaterThan(0);
      expect(await stillAliveAfterWaiting(tree)).toEqual([]);
      before = jsonLines<MetricsRow>(join(out, 'metrics.jsonl'));
      nextStep = (await readCheckpoint(out))!.nextStep;
    } finally {
      killLeftovers(tree);
    }
    expect(nextStep).toBeLessThan(STEPS);
    const committedVersion = before.find((row) => row.step === nextStep - 1)!.policyVersion;
    const resumed = await startCli([...rlArgs(out), '--resume'], { cwd: root, limitMs: 900_000 }).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(metricSteps(out)).toEqual(everyStep);
    // The engines got the committed weights before anything was generated.
    expect(/^weights v(\d+) → engines/m.exec(resumed.stderr)?.[1]).toBe(String(committedVersion));
    expect(resumed.stderr).toContain(`resuming at step ${nextStep}`);
    // Only the uncommitted steps ran again.
    const redone = [...resumed.stderr.matchAll(/^step (\d+):/gm)].map((match) => Number(match[1]));
    expect(redone).toEqual(everyStep.slice(nextStep));
  }, 1_200_000);

  it('a sandbox node killed: the next call runs on another node, the Python state rebuilt by replay', async () => {
    const nodeArgs = ['--workers', '2', '--warm', '1', '--preload', '', '--memory-mb', '512'];
    const nodes = await Promise.all([0, 1, 2].map(() => startNodeProcess(nodeArgs)));
    // No health checks but the ones asked for: the test decides when the client learns of a loss.
    const cluster = new SandboxClusterClient({
      nodes: nodes.map((node) => node.url),
      healthIntervalMs: 3_600_000,
      log: () => {},
    });
    /** A trajectory's session, its calls kept as the agent loop keeps them. */
    const trajectory = () => {
      const calls: ToolCall[] = [];
      const restores: number[] = [];
      const session = new TrajectorySession({
        provider: cluster,
        session: null,
        priorCalls: calls,
        timeoutMs: 10_000,
        onRestore: (replayedCalls) => restores.push(replayedCalls),
      });
      const run = async (code: string) => {
        const outcome = await session.execute(code, undefined);
        calls.push({ code, outcome, ms: 0 });
        return outcome;
      };
      return { run, restores, release: () => session.release(null) };
    };
    /** Kills the one node that holds a session (per its health report) and waits for its end. */
    const killHolder = async () => {
      await cluster.checkHealth();
      const holders = cluster.status().filter((node) => node.healthy && (node.sessions ?? 0) > 0);
      expect(holders).toHaveLength(1);
      const holder = nodes.find((node) => node.url === holders[0]!.url)!;
      const exited = new Promise((resolve) => holder.child.once('exit', resolve));
      holder.child.kill('SIGKILL');
      await exited;
      return holder.url;
    };
    try {
      await cluster.checkHealth();
      // The client knows the node is down (a health check) before the next call.
      const first = trajectory();
      expect(await first.run('state = 41')).toMatchObject({ status: 'ok' });
      expect(await first.run('state += 1')).toMatchObject({ status: 'ok' });
      const firstLost = await killHolder();
      await cluster.checkHealth();
      expect(cluster.status().find((node) => node.url === firstLost)?.healthy).toBe(false);
      expect(await first.run('print(state)')).toMatchObject({ status: 'ok', stdout: '42\n' });
      expect(first.restores).toEqual([2]);
      await first.release();

      // The client learns of the loss from the call itself (the connection is refused).
      const second = trajectory();
      expect(await second.run('import math\nsaved = math.factorial(5)')).toMatchObject({ status: 'ok' });
      const secondLost = await killHolder();
      expect(await second.run('print(saved)')).toMatchObject({ status: 'ok', stdout: '120\n' });
      expect(second.restores).toEqual([1]);
      expect(cluster.status().find((node) => node.url === secondLost)?.healthy).toBe(false);
      await second.release();
    } finally {
      await cluster.close();
      await Promise.all(nodes.map((node) => node.stop()));
    }
  }, 300_000);
});
