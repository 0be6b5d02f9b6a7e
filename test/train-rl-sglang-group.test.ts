/**
 * `train rl --weight-sync distributed` against engines that are not us: test/scripted_sglang.py,
 * a scripted SGLang 0.5.23 that forms the process group with the torch calls SGLang makes
 * (`init_custom_process_group`), refuses an update outside a `/begin_weight_update` …
 * `/end_weight_update` session, loads by the checkpoint's tensor names and reports every name it
 * would drop. Tiny models from `model init` (a dense Qwen3 and a Qwen3-MoE), the trainer started
 * here (one gloo rank), two steps with `--max-staleness 1`:
 * - the run completes with every sync landed on both engines (syncs.jsonl), each inside a
 *   session, and no name dropped;
 * - afterwards both engines' greedy tokens are those of a fresh scripted SGLang serving the
 *   run's `model/`, whose logprobs differ from the initial model's (the weights moved).
 * Assertions are on records and outputs, never on time.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type HttpEngine } from '../src/engine/create-engine.ts';
import { killAllClis, startCli } from './cli-process.ts';
import { type ScriptedSglang, startScriptedSglang } from './scripted-sglang.ts';
import { writeSumProblems } from './sum-problems.ts';

let root: string;
let data: string;
const servers: ScriptedSglang[] = [];
const clients: HttpEngine[] = [];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'agentmath-rl-sglang-group-'));
  data = join(root, 'sums.jsonl');
  writeSumProblems(data);
}, 60_000);

afterAll(async () => {
  killAllClis();
  for (const client of clients) client.close();
  await Promise.all(servers.map((server) => server.close()));
  rmSync(root, { recursive: true, force: true });
});

async function initModel(arch: 'qwen3' | 'qwen3-moe'): Promise<string> {
  const out = join(root, arch);
  const init = await startCli(
    ['model', 'init', '--arch', arch, '--out', out, '--hidden', '32', '--seed', '1'],
    {
      cwd: root,
      limitMs: 300_000,
    },
  ).done;
  expect(init.code, init.stderr).toBe(0);
  return out;
}

async function scripted(model: string, tokenDelayMs = 0): Promise<ScriptedSglang> {
  const server = await startScriptedSglang({ model, tokenDelayMs });
  servers.push(server);
  return server;
}

async function greedy(url: string): Promise<{ tokens: number[]; logprobs: number[] }> {
  const engine = createEngine({ url, api: 'sglang' });
  clients.push(engine);
  const result = await engine.generate({
    promptTokenIds: [12, 40, 41, 7, 99, 3, 15, 21],
    maxNewTokens: 12,
    temperature: 0,
    topP: 1,
    stop: [],
  });
  return { tokens: result.tokenIds ?? [], logprobs: result.logprobs ?? [] };
}

type SyncLine = { policyVersion: number; engines: { name: string; weightVersion: string | null }[] };

async function trainAgainst(model: string, out: string, engines: ScriptedSglang[]): Promise<void> {
  const run = join(root, out);
  const result = await startCli(
    [
      ...['train', 'rl', '--model', model, '--data', data, '--no-decontaminate', '--out', run],
      ...engines.flatMap((engine) => ['--engine', engine.url]),
      ...['--weight-sync', 'distributed', '--max-staleness', '1'],
      ...['--steps', '2', '--batch-size', '2', '--group-size', '2', '--max-tokens', '256'],
      ...['--max-tool-calls', '0', '--eval-every', '0', '--eval-problems', '1'],
      ...['--trainer-procs', '1', '--learning-rate', '1e-3', '--micro-batch-tokens', '512'],
    ],
    { cwd: root, limitMs: 400_000 },
  ).done;
  expect(result.code, `${result.stderr}\n${engines.map((engine) => engine.stderr()).join('\n')}`).toBe(0);
  const syncs = readFileSync(join(run, 'syncs.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as SyncLine);
  // The initial sync and one per step, each landed on every engine.
  expect(syncs.map((line) => line.policyVersion)).toEqual([0, 1, 2]);
  for (const line of syncs) {
    expect(line.engines.map((engine) => engine.weightVersion)).toEqual(
      engines.map(() => String(line.policyVersion)),
    );
  }
  for (const engine of engines) {
    const report = await engine.report();
    expect(report.unknown_weight_names).toEqual([]);
    // Every update inside a session; three sessions (v0, v1, v2).
    const session = report.events.filter((event) => /weight_update|update_weights/.test(event));
    expect(session.filter((event) => event === 'begin_weight_update')).toHaveLength(3);
    expect(session.some((event) => event.includes('refused'))).toBe(false);
    expect(session.at(-1)).toBe('end_weight_update');
  }
  // The engines hold the trained weights: exactly OUT/model's greedy tokens, and the weights moved.
  const trained = await greedy((await scripted(join(run, 'model'))).url);
  const initial = await greedy((await scripted(model)).url);
  const moved = Math.max(
    ...trained.logprobs.map((value, index) => Math.abs(value - (initial.logprobs[index] ?? value))),
  );
  expect(moved).toBeGreaterThan(1e-4);
  for (const engine of engines) {
    const served = await greedy(engine.url);
    expect(served.tokens).toEqual(trained.tokens);
    expect(served.logprobs).toEqual(trained.logprobs);
  }
}

describe('train rl --weight-sync distributed against a scripted SGLang 0.5.23', () => {
  it('a dense Qwen3 on two engines: every sync lands inside a session; the engines serve OUT/model', async () => {
    const model = await initModel('qwen3');
    await trainAgainst(model, 'dense', [await scripted(model, 20), await scripted(model, 20)]);
  }, 600_000);

  it('a Qwen3-MoE: the experts travel under the checkpoint names, none dropped', async () => {
    const model = await initModel('qwen3-moe');
    await trainAgainst(model, 'moe', [await scripted(model, 20)]);
  }, 600_000);
});
