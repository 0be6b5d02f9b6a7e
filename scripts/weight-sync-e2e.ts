/**
 * The long real-process check of `--weight-sync distributed` on CPU (gloo), kept out of the
 * default test suite (it takes 10–30 minutes on two cores):
 * 1. a tiny Qwen3 (`model init`), SFT'd on arith tool solutions (or SFT_MODEL_DIR, given);
 * 2. `train rl --model … --replicas 2 --trainer-procs 2 --weight-sync distributed
 *    --max-staleness 1 --checkpoint-every 3 --steps 6`, SIGKILL of the orchestrator once step 4
 *    is committed, `--resume`: it resumes at step 3 (the newest checkpoint), steps 0–5 are
 *    recorded once each, and the rows of steps 0–2 are those written before the kill;
 * 3. the run continued (`--resume --steps 8`) with `--engine URL URL` on two `engine serve`
 *    processes started on the SFT model: the group is formed with them and the committed
 *    weights broadcast first; afterwards both engines' greedy output (tokens and logprobs)
 *    equals a fresh engine's serving `OUT/model/`, and differs from the SFT model's.
 *
 *   node scripts/weight-sync-e2e.ts [SFT_MODEL_DIR]
 * Exits 0 and prints "ok" when every check holds; throws (exit 1) on the first that does not.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createEngine, type HttpEngine } from '../src/engine/create-engine.ts';
import { startEmbeddedWorker } from '../src/engine/local/index.ts';
import { killAllClis, startCli } from '../test/cli-process.ts';
import { alive, descendantsOf } from '../test/process-tree.ts';
import { committed, lines, until } from '../test/run-records.ts';

const folder = await mkdtemp(join(tmpdir(), 'agentmath-weight-sync-e2e-'));
const say = (line: string) => process.stderr.write(`[weight-sync-e2e] ${line}\n`);

async function cli(args: string[]): Promise<string> {
  const result = await startCli(args, { cwd: folder, limitMs: 3_600_000 }).done;
  assert.equal(result.code, 0, `agentmath ${args.join(' ')}\n${result.stderr.slice(-3000)}`);
  return result.stderr;
}

async function greedy(engine: HttpEngine, prompt: number[]): Promise<{ tokens: number[]; logprobs: number[] }> {
  const result = await engine.generate({ promptTokenIds: prompt, maxNewTokens: 16, temperature: 0, topP: 1, stop: [] });
  return { tokens: result.tokenIds ?? [], logprobs: result.logprobs ?? [] };
}

const workers: { stop(): Promise<void> }[] = [];
async function fresh(model: string): Promise<HttpEngine> {
  // A loaded machine may take minutes to start a worker: the bound is generous on purpose.
  const worker = await startEmbeddedWorker({ model, port: 0, restart: false, startupTimeoutMs: 900_000 });
  workers.push(worker);
  return createEngine({ url: worker.url, api: 'sglang' });
}

try {
  let sft = process.argv[2] === undefined ? null : resolve(process.argv[2]);
  if (sft === null) {
    say('building the SFT model');
    const base = join(folder, 'qwen3');
    const data = join(folder, 'arith-tool.jsonl');
    await cli(['model', 'init', '--arch', 'qwen3', '--out', base, '--hidden', '64', '--seed', '1']);
    await cli(['tasks', 'write-arith', '--out', data, '--count', '200', '--levels', '0', '--style', 'tool']);
    await cli([
      ...['train', 'sft', '--model', base, '--data', data, '--out', join(folder, 'sft')],
      ...['--steps', '150', '--batch-size', '16', '--learning-rate', '1e-2', '--warmup-steps', '3'],
      ...['--micro-batch-tokens', '4096', '--checkpoint-every', '150'],
    ]);
    sft = join(folder, 'sft', 'model');
  }
  const run = join(folder, 'rl');
  const rlArgs = (steps: number) => [
    ...['train', 'rl', '--model', sft as string, '--out', run, '--steps', String(steps)],
    ...['--levels', '0', '--problems', '64', '--batch-size', '2', '--group-size', '4'],
    // 320: the instructed prompt alone is ~190 tokens (its system message names the interpreter's libraries).
    ...['--max-tokens', '320', '--max-tool-calls', '2', '--partial-rollouts', '1', '--temperature', '0.8'],
    ...['--eval-every', '0', '--eval-problems', '4', '--seed', '0', '--learning-rate', '2e-3'],
    ...['--trainer-procs', '2', '--micro-batch-tokens', '1024', '--max-staleness', '1'],
    ...['--weight-sync', 'distributed', '--checkpoint-every', '3'],
  ];

  say('RL on two embedded replicas over a process group; SIGKILL once step 4 is committed');
  const first = startCli([...rlArgs(6), '--replicas', '2'], { cwd: folder, limitMs: 3_600_000 });
  await until(() => committed(run) >= 5 || first.child.exitCode !== null);
  assert.equal(first.child.exitCode, null, 'the run ended before step 4 was committed');
  const children = descendantsOf(first.child.pid as number);
  process.kill(first.child.pid as number, 'SIGKILL');
  await first.done;
  const committedAtKill = committed(run);
  await until(() => alive(children).length === 0);
  const atKill = lines(join(run, 'metrics.jsonl'));

  say(`killed with steps 0–${committedAtKill - 1} committed; resuming`);
  const resumed = await cli([...rlArgs(6), '--replicas', '2', '--resume']);
  assert.match(resumed, /weight sync: a process group of the trainer and 2 engine\(s\)/);
  // The killed run's group (recorded in OUT/weight-group.json) is destroyed before a new one forms.
  assert.match(resumed, /weight sync: destroyed the group agentmath-weights-\S+ of the stopped run/);
  assert.match(resumed, /resuming at step 3/);
  const metrics = lines(join(run, 'metrics.jsonl'));
  assert.deepEqual(
    metrics.map((row) => row.step),
    [0, 1, 2, 3, 4, 5],
  );
  for (const row of atKill.filter((line) => (line.step as number) < 3)) {
    assert.deepEqual(metrics[row.step as number], row, `step ${row.step} was rewritten`);
  }
  assert.ok(
    metrics.some((row) => (row.weightSyncMs as number) > 0),
    'no step synced weights',
  );
  assert.ok(existsSync(join(run, 'model', 'config.json')), 'no OUT/model/ at the end');

  say('continuing on two engine serve processes of the SFT model');
  const urls: string[] = [];
  for (let index = 0; index < 2; index++) {
    const server = startCli(['engine', 'serve', '--model', sft, '--port', '0'], {
      cwd: folder,
      limitMs: 3_600_000,
    });
    let output = '';
    server.child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    await until(() => /http:\/\/\S+\n/.test(output) || server.child.exitCode !== null);
    urls.push((/(http:\/\/\S+)\n/.exec(output) as RegExpExecArray)[1] as string);
  }
  await cli([...rlArgs(8), '--engine', urls[0] as string, '--engine', urls[1] as string, '--resume']);
  const all = lines(join(run, 'metrics.jsonl'));
  assert.deepEqual(
    all.map((row) => row.step),
    [0, 1, 2, 3, 4, 5, 6, 7],
  );

  say('comparing greedy outputs with a fresh engine of OUT/model/');
  const reference = await fresh(join(run, 'model'));
  const original = await fresh(sft);
  const served = urls.map((url) => createEngine({ url, api: 'sglang' }));
  const prompts = [
    [5, 17, 42, 7, 99, 3],
    [11, 12, 13],
  ];
  let movedFromSft = 0;
  for (const prompt of prompts) {
    const expected = await greedy(reference, prompt);
    for (const engine of served) assert.deepEqual(await greedy(engine, prompt), expected);
    const before = await greedy(original, prompt);
    movedFromSft = Math.max(
      movedFromSft,
      ...before.logprobs.map((value, index) => Math.abs(value - (expected.logprobs[index] ?? value))),
    );
  }
  assert.ok(movedFromSft > 1e-4, 'the trained model gives the SFT model’s logprobs: nothing was trained');
  process.stdout.write('ok\n');
} finally {
  killAllClis();
  await Promise.all(workers.map((worker) => worker.stop()));
  await rm(folder, { recursive: true, force: true });
}
