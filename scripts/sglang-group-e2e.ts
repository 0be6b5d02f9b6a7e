/**
 * `train rl --weight-sync distributed` against engines that are not us, kept out of the default
 * test suite (5–10 minutes on two cores): test/scripted_sglang.py, a scripted SGLang 0.5.23
 * written from its wheel that forms the process group with the torch calls SGLang makes
 * (`init_custom_process_group`), refuses an update outside a `/begin_weight_update` …
 * `/end_weight_update` session, loads by the checkpoint's tensor names and reports every name it
 * would drop. Tiny models from `model init` (a dense Qwen3 and a Qwen3-MoE), the trainer started
 * here (one gloo rank), two steps with `--max-staleness 1`:
 * 1. dense, two engines: the run completes with every sync (v0, v1, v2) landed on both engines
 *    (syncs.jsonl), each inside a session, no name dropped;
 * 2. MoE, one engine: the same, the experts under their per-expert checkpoint names;
 * after each run both engines' greedy tokens and logprobs are those of a fresh scripted SGLang
 * serving the run's `OUT/model`, whose logprobs differ from the initial model's.
 *
 *   node_modules/.bin/node scripts/sglang-group-e2e.ts
 * Exits 0 and prints "ok" when every check holds; throws (exit 1) on the first that does not.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, type HttpEngine } from '../src/engine/create-engine.ts';
import { killAllClis, startCli } from '../test/cli-process.ts';
import { type ScriptedSglang, startScriptedSglang } from '../test/scripted-sglang.ts';
import { writeSumProblems } from '../test/sum-problems.ts';

const root = mkdtempSync(join(tmpdir(), 'agentmath-sglang-group-e2e-'));
const data = join(root, 'sums.jsonl');
const servers: ScriptedSglang[] = [];
const clients: HttpEngine[] = [];
const say = (line: string) => process.stderr.write(`[sglang-group-e2e] ${line}\n`);

async function initModel(arch: 'qwen3' | 'qwen3-moe'): Promise<string> {
  const out = join(root, arch);
  const args = ['model', 'init', '--arch', arch, '--out', out, '--hidden', '32', '--seed', '1'];
  const init = await startCli(args, { cwd: root, limitMs: 600_000 }).done;
  assert.equal(init.code, 0, init.stderr);
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
    { cwd: root, limitMs: 900_000 },
  ).done;
  assert.equal(result.code, 0, `${result.stderr}\n${engines.map((engine) => engine.stderr()).join('\n')}`);
  const syncs = readFileSync(join(run, 'syncs.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as SyncLine);
  // The initial sync and one per step, each landed on every engine.
  assert.deepEqual(
    syncs.map((line) => line.policyVersion),
    [0, 1, 2],
  );
  for (const line of syncs) {
    assert.deepEqual(
      line.engines.map((engine) => engine.weightVersion),
      engines.map(() => String(line.policyVersion)),
    );
  }
  for (const engine of engines) {
    const report = await engine.report();
    assert.deepEqual(report.unknown_weight_names, [], 'the engine dropped weights it does not know');
    const session = report.events.filter((event) => /weight_update|update_weights/.test(event));
    assert.equal(session.filter((event) => event === 'begin_weight_update').length, 3);
    assert.equal(
      session.some((event) => event.includes('refused')),
      false,
    );
    assert.equal(session.at(-1), 'end_weight_update');
  }
  // The engines hold the trained weights: exactly OUT/model's greedy tokens, and the weights moved.
  const trained = await greedy((await scripted(join(run, 'model'))).url);
  const initial = await greedy((await scripted(model)).url);
  const moved = Math.max(
    ...trained.logprobs.map((value, index) => Math.abs(value - (initial.logprobs[index] ?? value))),
  );
  assert.ok(moved > 1e-4, 'the trained model gives the initial logprobs: nothing was trained');
  for (const engine of engines) assert.deepEqual(await greedy(engine.url), trained);
}

try {
  writeSumProblems(data);
  say('a dense Qwen3 on two scripted SGLang engines');
  const dense = await initModel('qwen3');
  await trainAgainst(dense, 'dense', [await scripted(dense, 20), await scripted(dense, 20)]);
  say('a Qwen3-MoE on one');
  const moe = await initModel('qwen3-moe');
  await trainAgainst(moe, 'moe', [await scripted(moe, 20)]);
  process.stdout.write('ok\n');
} finally {
  killAllClis();
  for (const client of clients) client.close();
  await Promise.all(servers.map((server) => server.close()));
  rmSync(root, { recursive: true, force: true });
}
