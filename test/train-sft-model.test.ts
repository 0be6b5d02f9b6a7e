/**
 * The real-model path end to end on CPU: `model init` (a random-init Qwen3 with its own BPE
 * tokenizer), `train sft --model` on the distributed trainer (torchrun, gloo), kill -9 in the
 * middle and `--resume`, compared with an uninterrupted run; and the trainer service's
 * contract through its TypeScript client (binary batches, scoring, GRPO, errors).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DistributedTrainerError,
  encodeTrainerBatch,
  startTrainerService,
  type TrainerService,
} from '../src/train/index.ts';
import { killAllClis, killGroup, startCli } from './cli-process.ts';
import { metricSteps } from './metric-steps.ts';
import { alive, descendantsOf } from './process-tree.ts';
import { expectRecordFiles } from './record-checks.ts';

let folder: string;
let model: string;
let data: string;

/** Every tensor of a safetensors file as float32 values (the export is fp32). */
function readSafetensors(path: string): Map<string, Float32Array> {
  const bytes = readFileSync(path);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')) as Record<
    string,
    { dtype: string; data_offsets: [number, number] }
  >;
  const tensors = new Map<string, Float32Array>();
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    expect(entry.dtype).toBe('F32');
    const [start, end] = entry.data_offsets;
    const slice = bytes.subarray(8 + headerLength + start, 8 + headerLength + end);
    tensors.set(
      name,
      new Float32Array(slice.buffer.slice(slice.byteOffset, slice.byteOffset + slice.byteLength)),
    );
  }
  return tensors;
}

const trainArgs = (out: string) => [
  'train',
  'sft',
  '--model',
  model,
  '--data',
  data,
  '--out',
  out,
  '--steps',
  '6',
  '--batch-size',
  '4',
  '--checkpoint-every',
  '2',
  '--learning-rate',
  '1e-2',
  '--warmup-steps',
  '1',
  '--micro-batch-tokens',
  '512',
  '--eval-problems',
  '0',
];

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'agentmath-sft-model-'));
  model = join(folder, 'qwen3');
  data = join(folder, 'arith-text.jsonl');
  const init = await startCli(
    ['model', 'init', '--arch', 'qwen3', '--out', model, '--hidden', '32', '--seed', '3'],
    {
      cwd: folder,
    },
  ).done;
  expect(init.code, init.stderr).toBe(0);
  const written = await startCli(
    ['tasks', 'write-arith', '--out', data, '--count', '24', '--levels', '1', '--style', 'text'],
    { cwd: folder },
  ).done;
  expect(written.code, written.stderr).toBe(0);
}, 300_000);

afterAll(async () => {
  killAllClis();
  await rm(folder, { recursive: true, force: true });
});

describe('train sft --model (a Qwen3 from model init)', () => {
  it('learns, and kill -9 then --resume ends with the weights of an uninterrupted run', async () => {
    const straight = join(folder, 'straight');
    const first = await startCli(trainArgs(straight), { cwd: folder, limitMs: 400_000 }).done;
    expect(first.code, first.stderr).toBe(0);
    const losses = (await readFile(join(straight, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            step: number;
            loss: number;
            tokensTrained: number;
            tokensTotal: number;
            learningRate: number;
            gradNorm: number;
            stepMs: number;
            tokensTotalPerSecond: number;
            tokens: number;
            tokensPerSecond: number;
          },
      );
    expectRecordFiles(straight, ['sft/metrics.jsonl', 'sft/config.json']);
    expect(losses.map((row) => row.step)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const row of losses) {
      expect(row.tokensTrained).toBeGreaterThan(0);
      // The first documented names: trained tokens of the step, and those per second of it.
      expect(row.tokens).toBe(row.tokensTrained);
      expect(row.tokensPerSecond).toBeGreaterThanOrEqual((1000 * row.tokens) / (row.stepMs + 0.5));
      expect(row.tokensPerSecond).toBeLessThanOrEqual((1000 * row.tokens) / (row.stepMs - 0.5));
      // Text solutions behind a prompt: the prompt's tokens are counted, not trained.
      expect(row.tokensTotal).toBeGreaterThan(row.tokensTrained);
      // stepMs is rounded to the millisecond; the rate divides by the step's unrounded time.
      expect(row.tokensTotalPerSecond).toBeGreaterThanOrEqual((1000 * row.tokensTotal) / (row.stepMs + 0.5));
      expect(row.tokensTotalPerSecond).toBeLessThanOrEqual((1000 * row.tokensTotal) / (row.stepMs - 0.5));
      expect(Number.isFinite(row.gradNorm)).toBe(true);
    }
    expect(losses.at(-1)!.loss).toBeLessThan(losses[0]!.loss);
    expect(existsSync(join(straight, 'model', 'model.safetensors'))).toBe(true);
    expect(existsSync(join(straight, 'model', 'tokenizer.json'))).toBe(true);

    const interrupted = join(folder, 'interrupted');
    const run = startCli(trainArgs(interrupted), { cwd: folder, limitMs: 400_000 });
    const deadline = Date.now() + 300_000;
    while (
      (await metricSteps(interrupted)).length < 3 &&
      Date.now() < deadline &&
      run.child.exitCode === null
    ) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect((await metricSteps(interrupted)).length).toBeGreaterThanOrEqual(3);
    const trainers = descendantsOf(run.child.pid!);
    killGroup(run.child);
    await run.done;
    // The trainer (its own process group) notices its parent is gone and exits with its ranks.
    const waitUntil = Date.now() + 60_000;
    while (alive(trainers).length > 0 && Date.now() < waitUntil)
      await new Promise((resolve) => setTimeout(resolve, 250));
    expect(alive(trainers)).toEqual([]);

    const resumed = await startCli([...trainArgs(interrupted), '--resume'], { cwd: folder, limitMs: 400_000 })
      .done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/resumed from step [24]/);
    expect(await metricSteps(interrupted)).toEqual([1, 2, 3, 4, 5, 6]);
    const expected = readSafetensors(join(straight, 'model', 'model.safetensors'));
    const actual = readSafetensors(join(interrupted, 'model', 'model.safetensors'));
    expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
    let largest = 0;
    for (const [name, values] of expected) {
      const other = actual.get(name)!;
      for (let index = 0; index < values.length; index++) {
        largest = Math.max(largest, Math.abs(values[index]! - other[index]!));
      }
    }
    // Same process count, same data order, same optimizer state: equal up to float rounding.
    expect(largest).toBeLessThan(1e-5);
  }, 1_200_000);

  it('a resume may lengthen the run with --steps (other changes are refused)', async () => {
    const run = join(folder, 'straight');
    // A run saved before level weights existed has no such field: it drew one problem per level.
    const configPath = join(run, 'config.json');
    const { levelWeights: _, ...older } = JSON.parse(readFileSync(configPath, 'utf8'));
    writeFileSync(configPath, `${JSON.stringify(older, null, 2)}\n`);
    const longer = await startCli([...trainArgs(run), '--resume', '--steps', '7'], {
      cwd: folder,
      limitMs: 400_000,
    }).done;
    expect(longer.code, longer.stderr).toBe(0);
    expect(longer.stderr).toContain('schedule: 7 steps');
    expect(await metricSteps(run)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const changed = await startCli([...trainArgs(run), '--resume', '--batch-size', '2'], { cwd: folder })
      .done;
    expect(changed.code).toBe(2);
    expect(changed.stderr).toContain('batchSize');
    const weighted = await startCli(
      [...trainArgs(run), '--resume', '--levels', '1,2,3,4', '--level-weights', '1,1,1,2'],
      { cwd: folder },
    ).done;
    expect(weighted.code).toBe(2);
    expect(weighted.stderr).toContain('levelWeights');
  }, 600_000);

  it('refuses data written in another dialect, naming the record', async () => {
    const tool = join(folder, 'arith-tool-tags.jsonl');
    const written = await startCli(
      ['tasks', 'write-arith', '--out', tool, '--count', '2', '--levels', '1', '--style', 'tool'],
      { cwd: folder },
    ).done;
    expect(written.code, written.stderr).toBe(0);
    const args = trainArgs(join(folder, 'markdown-run')).map((arg) => (arg === data ? tool : arg));
    const refused = await startCli([...args, '--dialect', 'markdown'], { cwd: folder }).done;
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`${tool} record 1`);
    expect(refused.stderr).toContain('does not end with a markdown code block');
  }, 120_000);

  it('refuses a folder that holds another run, and a resume of nothing', async () => {
    const other = join(folder, 'straight');
    const again = await startCli(trainArgs(other), { cwd: folder }).done;
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already holds an `agentmath train sft` run');
    const nothing = await startCli([...trainArgs(join(folder, 'nothing')), '--resume'], { cwd: folder }).done;
    expect(nothing.stderr).toContain('there is no `agentmath train sft` run to resume');
    expect(nothing.code).toBe(2);
  }, 120_000);
});

describe('trainer service', () => {
  let service: TrainerService;

  beforeAll(async () => {
    service = await startTrainerService({ model, microBatchTokens: 64 });
  }, 300_000);

  afterAll(async () => {
    await service?.stop();
  });

  it('scores TypeScript-encoded batches and takes GRPO steps that move the policy', async () => {
    const state = await service.client.state();
    expect(state.worldSize).toBe(1);
    expect(state.policyVersion).toBe(0);
    // One rank takes every core; idle OpenMP threads sleep rather than spin.
    expect(state.threads).toBe(availableParallelism());
    expect(state.ompWaitPolicy).toBe('PASSIVE');
    const sequences = [
      [5, 9, 12, 30, 31, 7],
      [8, 3, 3],
      [40, 41, 42, 43, 44, 45, 46, 47, 48, 49],
    ];
    const before = await service.client.score(sequences);
    expect(before.tokenLogprobs.map((row) => row.length)).toEqual([6, 3, 10]);
    for (const row of before.tokenLogprobs) {
      expect(row[0]).toBe(0);
      for (const value of row.slice(1)) expect(value).toBeLessThan(0);
    }
    const result = await service.client.grpoStep({
      sequences: sequences.map((inputIds, index) => ({
        inputIds,
        lossMask: inputIds.map((_, position) => (position >= 2 ? 1 : 0)),
        advantage: index === 0 ? 1 : -0.5,
        oldLogprobs: before.tokenLogprobs[index]!,
      })),
      learningRate: 5e-3,
      temperature: 1,
    });
    // On-policy (old logprobs are the current policy's): the ratio is 1, nothing clipped.
    expect(result.meanRatio).toBeCloseTo(1, 5);
    expect(result.clipFraction).toBe(0);
    expect(result.approxKlOld).toBeLessThan(1e-6);
    expect(result.policyVersion).toBe(1);
    const after = await service.client.score([sequences[0]!]);
    const gain = after.tokenLogprobs[0]!.slice(2).reduce(
      (sum, value, index) => sum + value - before.tokenLogprobs[0]![index + 2]!,
      0,
    );
    expect(gain).toBeGreaterThan(0); // the positive-advantage sequence became more likely
  }, 120_000);

  it('answers a malformed step with 400 and the reason, and stays usable', async () => {
    const error = await service.client
      .sftStep({ sequences: [{ inputIds: [1, 2, 3], lossMask: [1, 0, 0] }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DistributedTrainerError);
    expect((error as DistributedTrainerError).status).toBe(400);
    expect((error as Error).message).toContain('no trained tokens');
    expect((await service.client.state()).worldSize).toBe(1);
  }, 60_000);

  it('answers token ids outside the vocabulary and values out of range with 400 naming the field, then trains on', async () => {
    const step = (inputIds: number[], lossMask: number[]) =>
      service.client.sftStep({ sequences: [{ inputIds, lossMask }], learningRate: 1e-3 });
    const refusals: Array<[number[], number[], RegExp]> = [
      [[5, 6, 1_000_000], [0, 1, 1], /400: \/sft_step: input_ids: sequence 0 position 2 holds 1000000/],
      [[5, -1, 7], [0, 1, 1], /input_ids: sequence 0 position 1 holds -1/],
    ];
    for (const [inputIds, lossMask, message] of refusals) {
      const error = await step(inputIds, lossMask).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(DistributedTrainerError);
      expect((error as DistributedTrainerError).status).toBe(400);
      expect((error as Error).message).toMatch(message);
    }
    // The TypeScript writer sends masks as 0/1: a mask byte of 3 only comes from another client.
    const batch = encodeTrainerBatch([{ inputIds: [5, 6, 7], lossMask: [0, 1, 1] }], { learningRate: 1e-3 });
    batch[batch.length - 1] = 3;
    const raw = await fetch(`${service.url}/sft_step`, { method: 'POST', body: new Uint8Array(batch) });
    expect(raw.status).toBe(400);
    expect(((await raw.json()) as { error: string }).error).toMatch(
      /loss_mask: sequence 0 position 2 holds 3/,
    );
    const scored = await service.client.score([[5, 6, 99_999]]).catch((caught: unknown) => caught);
    expect((scored as DistributedTrainerError).status).toBe(400);
    // The service kept serving: a good batch trains.
    const before = (await service.client.state()).policyVersion;
    const trained = await step([5, 6, 7, 8], [0, 1, 1, 1]);
    expect(trained.policyVersion).toBe(before + 1);
  }, 60_000);
});
