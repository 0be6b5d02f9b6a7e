/**
 * `train rl --model … --engine URL --engine URL` against scripted servers that behave as SGLang
 * 0.5.23 and vLLM 0.33.0 do on the weight-sync routes (test/scripted-rl-engine.ts): a tiny Qwen3
 * from `model init`, the trainer started here, 2 steps with `--max-staleness 1`.
 *
 * - SGLang: the run completes, every sync pauses with abort, flushes until it succeeds, loads
 *   and continues; each engine reports each policy version (syncs.jsonl).
 * - An engine that refuses the weights (SGLang's 400) stops the run with exit 1 naming it and
 *   SGLang's message; an engine that cannot be connected to is skipped and said so.
 * - vLLM: the same run through its RL routes, at --temperature 0.7 on servers that return
 *   logprobs after temperature, its held-out evaluation through vLLM too; a server that returns
 *   them before temperature (vLLM's default) is refused at the start.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadTokenizer } from '../src/engine/load-tokenizer.ts';
import type { Tokenizer } from '../src/engine/tokenizer.ts';
import { killAllClis, startCli } from './cli-process.ts';
import { expectRecordFiles } from './record-checks.ts';
import {
  type ScriptedRlEngine,
  type ScriptedRlEngineOptions,
  startScriptedRlEngine,
} from './scripted-rl-engine.ts';
import { writeSumProblems } from './sum-problems.ts';

let root: string;
let model: string;
let data: string;
let tokenizer: Tokenizer;
let answer: (prompt: string) => string;
const engines: ScriptedRlEngine[] = [];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'agentmath-rl-engines-'));
  model = join(root, 'init');
  const init = await startCli(
    ['model', 'init', '--arch', 'qwen3', '--out', model, '--hidden', '32', '--seed', '1'],
    {
      cwd: root,
      limitMs: 300_000,
    },
  ).done;
  expect(init.code, init.stderr).toBe(0);
  tokenizer = await loadTokenizer(model);
  data = join(root, 'sums.jsonl');
  writeSumProblems(data);
}, 400_000);

beforeEach(() => {
  answer = scriptAnswers();
});

afterAll(async () => {
  killAllClis();
  await Promise.all(engines.map((engine) => engine.close()));
  rmSync(root, { recursive: true, force: true });
});

/**
 * The script, shared by every engine of a test (the router spreads a group over them): a
 * problem's first sample answers right at once, its second wrong after a ramble (~110 tokens),
 * so every group of 2 is kept and a rollout outlasts a training step here: syncs land while
 * requests run.
 */
function scriptAnswers(): (prompt: string) => string {
  const attempts = new Map<string, number>();
  return (prompt) => {
    const attempt = attempts.get(prompt) ?? 0;
    attempts.set(prompt, attempt + 1);
    const sums = [...prompt.matchAll(/Add (\d+) and (\d+)\./g)].at(-1);
    const sum = sums === undefined ? 0 : Number(sums[1]) + Number(sums[2]);
    if (attempt % 2 === 0) return `The sum is \\boxed{${sum}}.`;
    return `${'Let me add the digits one by one. '.repeat(6)}The sum is \\boxed{${sum + 1}}.`;
  };
}

async function engine(options: Partial<ScriptedRlEngineOptions> = {}): Promise<ScriptedRlEngine> {
  const started = await startScriptedRlEngine({
    api: 'sglang',
    tokenizer,
    answer,
    tokenDelayMs: 80,
    ...options,
  });
  engines.push(started);
  return started;
}

function trainRl(out: string, urls: string[], extra: string[] = []) {
  const args = [
    ...['train', 'rl', '--model', model, '--data', data, '--no-decontaminate', '--out', join(root, out)],
    ...urls.flatMap((url) => ['--engine', url]),
    ...['--steps', '2', '--batch-size', '2', '--group-size', '2', '--max-tokens', '256'],
    ...['--max-tool-calls', '0'],
    ...['--eval-every', '0', '--eval-problems', '1', '--trainer-procs', '1', '--learning-rate', '1e-3'],
    ...['--micro-batch-tokens', '512', '--max-staleness', '1', ...extra],
  ];
  return startCli(args, { cwd: root, limitMs: 400_000 }).done;
}

type SyncLine = { policyVersion: number; engines: { name: string; weightVersion: string | null }[] };
const syncs = (out: string): SyncLine[] =>
  readFileSync(join(root, out, 'syncs.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as SyncLine);

/** The control routes of each update, in order: pause abort, flushes until one succeeds, the load, continue. */
function updatesFollowTheProtocol(log: readonly string[], load: RegExp, flushed: RegExp): number {
  let updates = 0;
  log.forEach((line, index) => {
    if (!load.test(line)) return;
    updates++;
    const before = log.slice(0, index);
    const pause = before.findLastIndex((entry) => entry.startsWith('pause'));
    expect(before[pause]).toBe('pause abort');
    expect(before.slice(pause + 1).at(-1)).toMatch(flushed);
  });
  expect(log.some((line) => line.includes('in_place') || line.includes('keep'))).toBe(false);
  return updates;
}

describe('train rl against SGLang-faithful and vLLM-faithful engines', () => {
  it('SGLang: two engines, --max-staleness 1: completes, each sync paused with abort, flushed, loaded, continued', async () => {
    const [a, b] = [await engine(), await engine()];
    const run = await trainRl('sglang', [a!.url, b!.url]);
    expect(run.code, run.stderr).toBe(0);
    // Every record file of the run, and of its held-out evaluation, as the schemas promise.
    const out = join(root, 'sglang');
    expectRecordFiles(out, [
      'rl/config.json',
      'rl/metrics.jsonl',
      'rl/evals.jsonl',
      'rl/syncs.jsonl',
      'rollout/trajectories.jsonl',
      'rollout/groups.jsonl',
      'rollout/steps.jsonl',
      'rollout/problem-history.jsonl',
    ]);
    const evaluations = readdirSync(join(out, 'eval-runs'));
    expect(evaluations).toEqual(['step-00001']);
    expectRecordFiles(join(out, 'eval-runs', 'step-00001'), [
      'held-out-eval/config.json',
      'eval/trajectories.jsonl',
      'eval/summary.json',
    ]);
    const lines = syncs('sglang');
    expect(lines.map((line) => line.policyVersion)).toEqual([0, 1, 2]);
    for (const line of lines) {
      expect(line.engines).toEqual([
        { name: `sglang@${a!.url}`, weightVersion: String(line.policyVersion) },
        { name: `sglang@${b!.url}`, weightVersion: String(line.policyVersion) },
      ]);
    }
    for (const scripted of [a!, b!]) {
      expect(updatesFollowTheProtocol(scripted.log, /^update /, /^flush 200$/)).toBe(3);
      expect(
        scripted.log.filter((line) => line.startsWith('update ') && !line.startsWith('update 200')),
      ).toEqual([]);
    }
    process.stderr.write(`requests aborted by a sync and resubmitted: ${a!.preempted() + b!.preempted()}\n`);
  }, 600_000);

  it('an engine that refuses the weights stops the run with exit 1, naming it and its message', async () => {
    const [good, refusing] = [
      await engine({ tokenDelayMs: 20 }),
      await engine({ refuseLoads: true, tokenDelayMs: 20 }),
    ];
    const run = await trainRl('refused', [good!.url, refusing!.url], ['--steps', '1']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `refused by sglang@${refusing!.url} (Failed to update weights: The size of tensor a`,
    );
    expect(run.stderr).not.toContain('unreachable');
    expect(refusing!.log.at(-1)).toBe('continue');
  }, 600_000);

  it('an engine that cannot be connected to is skipped at every sync and said so', async () => {
    const live = await engine({ tokenDelayMs: 20 });
    const down = await engine();
    await down.close();
    const run = await trainRl('down', [live.url, down.url], ['--steps', '1']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`weight sync v0: sglang@${down.url} unreachable, skipped`);
    expect(run.stderr).toContain(`weight sync v1: sglang@${down.url} unreachable, skipped`);
    expect(syncs('down').map((line) => line.engines[1])).toEqual([
      { name: `sglang@${down.url}`, weightVersion: null },
      { name: `sglang@${down.url}`, weightVersion: null },
    ]);
  }, 600_000);

  it('vLLM: --api vllm trains through /pause, /reset_prefix_cache, /collective_rpc reload_weights, /update_weight_version, /resume', async () => {
    // At T ≠ 1, on servers that return logprobs after temperature (--logprobs-mode processed_logprobs).
    const vllm = { api: 'vllm', logprobsMode: 'processed_logprobs' } as const;
    const [a, b] = [await engine(vllm), await engine(vllm)];
    const run = await trainRl('vllm', [a!.url, b!.url], ['--api', 'vllm', '--temperature', '0.7']);
    expect(run.code, run.stderr).toBe(0);
    expect(syncs('vllm').map((line) => line.engines.map((engine) => engine.weightVersion))).toEqual([
      ['0', '0'],
      ['1', '1'],
      ['2', '2'],
    ]);
    for (const scripted of [a!, b!]) {
      expect(updatesFollowTheProtocol(scripted.log, /^reload 200$/, /^reset_prefix_cache true$/)).toBe(3);
    }
    // The held-out evaluation at the end speaks the run's API: its one problem was answered and graded.
    const evals = readFileSync(join(root, 'vllm', 'evals.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(evals.map((line) => (JSON.parse(line) as { problems: number }).problems)).toEqual([1]);
  }, 600_000);

  it('vLLM at --temperature ≠ 1 returning logprobs before temperature (its default) is refused at the start', async () => {
    const raw = await engine({ api: 'vllm' });
    const run = await trainRl(
      'vllm-raw',
      [raw.url],
      ['--api', 'vllm', '--temperature', '0.7', '--steps', '1'],
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `${raw.url}: vLLM returns logprobs before temperature (its default --logprobs-mode raw_logprobs)`,
    );
    expect(run.stderr).toContain('restart it with --logprobs-mode processed_logprobs');
    expect(raw.log).toEqual([]);
  }, 600_000);
});
