/**
 * `train rl --model` through the real cluster path on CPU: a tiny Qwen3 from `model init`,
 * SFT'd on arith tool solutions with `train sft --model`, then RL on two engine replicas
 * (embedded workers speaking SGLang's routes) with the distributed trainer under torchrun
 * (2 gloo ranks) and rollout overlapped with training (`--max-staleness 1`):
 * - SIGKILL of the orchestrator after step 1 is committed, then `--resume`: every step is
 *   recorded once, every child process exits by itself;
 * - the same run continued with `--engine URL URL` on two `agentmath engine serve` processes the
 *   test started (the disaggregated path a GPU cluster uses): the engines are first brought to
 *   the committed weights, and afterwards their greedy output equals that of a fresh engine
 *   serving the run's `model/` (they really hold the trained weights) and differs from the
 *   SFT model's.
 * Assertions are on records and outputs, never on time.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type HttpEngine } from '../../src/engine/create-engine.ts';
import { type EmbeddedWorker, startEmbeddedWorker } from '../../src/engine/local/index.ts';
import { killAllClis, startCli } from '../cli-process.ts';
import { alive, descendantsOf } from '../process-tree.ts';
import { committed, lines, until } from '../run-records.ts';

let folder: string;
let sftModel: string;
const workers: EmbeddedWorker[] = [];
const engines: HttpEngine[] = [];

const rlArgs = (run: string, steps: number) => [
  ...['train', 'rl', '--model', sftModel, '--out', run, '--steps', String(steps)],
  ...['--levels', '0', '--problems', '64', '--batch-size', '2', '--group-size', '4'],
  ...['--max-tokens', '320', '--max-tool-calls', '2', '--partial-rollouts', '1', '--temperature', '0.8'],
  ...['--eval-every', '0', '--eval-problems', '4', '--seed', '0', '--learning-rate', '2e-3'],
  ...['--trainer-procs', '2', '--micro-batch-tokens', '1024', '--max-staleness', '1'],
  ...['--checkpoint-every', '1'],
];

/** Greedy tokens and their logprobs (the logprobs move with any change of the weights). */
async function greedy(
  engine: HttpEngine,
  prompt: number[],
): Promise<{ tokens: number[]; logprobs: number[] }> {
  const result = await engine.generate({
    promptTokenIds: prompt,
    maxNewTokens: 16,
    temperature: 0,
    topP: 1,
    stop: [],
  });
  return { tokens: result.tokenIds ?? [], logprobs: result.logprobs ?? [] };
}

/** The largest difference between two logprob lists of the same length. */
function largestGap(left: number[], right: number[]): number {
  expect(left).toHaveLength(right.length);
  return Math.max(...left.map((value, index) => Math.abs(value - (right[index] as number))));
}

async function serve(model: string): Promise<HttpEngine> {
  const worker = await startEmbeddedWorker({ model, port: 0, restart: false });
  workers.push(worker);
  const engine = createEngine({ url: worker.url, api: 'sglang' });
  engines.push(engine);
  return engine;
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'agentmath-rl-cluster-'));
  const base = join(folder, 'qwen3');
  const data = join(folder, 'arith-tool.jsonl');
  const steps: string[][] = [
    ['model', 'init', '--arch', 'qwen3', '--out', base, '--hidden', '64', '--seed', '1'],
    ['tasks', 'write-arith', '--out', data, '--count', '200', '--levels', '0', '--style', 'tool'],
    [
      ...['train', 'sft', '--model', base, '--data', data, '--out', join(folder, 'sft')],
      ...['--steps', '150', '--batch-size', '16', '--learning-rate', '1e-2', '--warmup-steps', '3'],
      ...['--micro-batch-tokens', '4096', '--checkpoint-every', '150'],
    ],
  ];
  for (const args of steps) {
    const result = await startCli(args, { cwd: folder, limitMs: 900_000 }).done;
    expect(result.code, result.stderr).toBe(0);
  }
  sftModel = join(folder, 'sft', 'model');
}, 1_200_000);

afterAll(async () => {
  killAllClis();
  for (const engine of engines) engine.close();
  await Promise.all(workers.map((worker) => worker.stop()));
  await rm(folder, { recursive: true, force: true });
});

describe('train rl --model (engine replicas, distributed trainer, weight sync, overlap)', () => {
  it('survives SIGKILL with every step once, then continues on two engine serve processes that end up holding the trained weights', async () => {
    const run = join(folder, 'rl');
    // 1. Two embedded replicas, two trainer ranks; SIGKILL of the orchestrator alone once step 1 is committed.
    const first = startCli([...rlArgs(run, 3), '--replicas', '2'], { cwd: folder, limitMs: 900_000 });
    await until(() => committed(run) >= 2 || first.child.exitCode !== null);
    expect(first.child.exitCode, 'the run ended before step 1 was committed').toBeNull();
    const children = descendantsOf(first.child.pid as number);
    expect(children.length).toBeGreaterThan(3); // two engines, torchrun and its ranks, sandbox workers
    process.kill(first.child.pid as number, 'SIGKILL');
    await first.done;
    const committedAtKill = committed(run);
    await until(() => alive(children).length === 0);
    const atKill = lines(join(run, 'metrics.jsonl'));

    const resumed = await startCli([...rlArgs(run, 3), '--replicas', '2', '--resume'], {
      cwd: folder,
      limitMs: 900_000,
    }).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    const metrics = lines(join(run, 'metrics.jsonl'));
    expect(metrics.map((row) => row.step)).toEqual([0, 1, 2]);
    // The committed steps were not redone: their rows are the ones written before the kill.
    for (const row of atKill.filter((line) => (line.step as number) < committedAtKill)) {
      expect(metrics[row.step as number]).toEqual(row);
    }
    for (const row of metrics) {
      for (const field of [
        'weightSyncMs',
        'trainMs',
        'rolloutMs',
        'engineIdleMs',
        'trainerIdleMs',
        'stalenessMax',
        'stalenessMean',
      ]) {
        expect(row).toHaveProperty(field);
      }
    }
    // Every model segment says which policy version and which replica produced it.
    const segments = lines(join(run, 'trajectories.jsonl')).flatMap((trajectory) =>
      (trajectory.segments as Record<string, unknown>[]).filter((segment) => segment.kind === 'model'),
    );
    expect(segments.length).toBeGreaterThan(0);
    for (const segment of segments) {
      expect(segment.policyVersion).toBeTypeOf('number');
      expect(String(segment.replica)).toMatch(/^replica-[01]$/);
    }
    expect(new Set(segments.map((segment) => segment.replica)).size).toBe(2);
    // Training happened (otherwise nothing below would mean anything).
    expect(metrics.some((row) => (row.groupsKept as number) > 0)).toBe(true);
    expect(existsSync(join(run, 'model', 'config.json'))).toBe(true);

    // 2. The same run continued on two `engine serve` processes serving the SFT model (v0).
    const urls: string[] = [];
    for (let index = 0; index < 2; index++) {
      const server = startCli(['engine', 'serve', '--model', sftModel, '--port', '0'], {
        cwd: folder,
        limitMs: 900_000,
      });
      let output = '';
      server.child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      await until(() => /http:\/\/\S+\n/.test(output) || server.child.exitCode !== null);
      urls.push((/(http:\/\/\S+)\n/.exec(output) as RegExpExecArray)[1] as string);
    }
    const continued = await startCli(
      [...rlArgs(run, 5), '--engine', urls[0] as string, '--engine', urls[1] as string, '--resume'],
      { cwd: folder, limitMs: 900_000 },
    ).done;
    expect(continued.code, continued.stderr).toBe(0);
    const all = lines(join(run, 'metrics.jsonl'));
    expect(all.map((row) => row.step)).toEqual([0, 1, 2, 3, 4]);
    const lastVersion = all.at(-1)?.policyVersion as number;
    expect(lastVersion).toBeGreaterThan(0);
    // Before generating, the engines were brought to the committed policy (v of step 2).
    expect(continued.stderr).toContain(`weights v${metrics.at(-1)?.policyVersion as number} → engines`);
    // Segments generated from step 3 on (a carried group's older members keep their replica).
    const newSegments = lines(join(run, 'trajectories.jsonl')).flatMap((trajectory) =>
      (trajectory.segments as Record<string, unknown>[]).filter(
        (segment) => segment.kind === 'model' && (segment.step as number) >= 3,
      ),
    );
    expect(newSegments.length).toBeGreaterThan(0);
    expect(new Set(newSegments.map((segment) => segment.replica))).toEqual(new Set(urls));

    // 3. The engines hold the trained weights: greedy output equals a fresh engine of model/,
    // tokens and logprobs (the SFT model's logprobs differ: the greedy tokens alone may not).
    const prompt = [12, 40, 41, 7, 99, 3, 15, 21];
    const fresh = await greedy(await serve(join(run, 'model')), prompt);
    const sft = await greedy(await serve(sftModel), prompt);
    if (sft.tokens.join() === fresh.tokens.join())
      expect(largestGap(fresh.logprobs, sft.logprobs)).toBeGreaterThan(1e-4);
    for (const url of urls) {
      const engine = createEngine({ url, api: 'sglang' });
      engines.push(engine);
      const served = await greedy(engine, prompt);
      expect(served.tokens).toEqual(fresh.tokens);
      expect(largestGap(served.logprobs, fresh.logprobs)).toBeLessThan(1e-5);
    }
  }, 1_800_000);
});
