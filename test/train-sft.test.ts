/**
 * `train sft` end to end on the embedded default (a new byte model, a few steps, a few dozen
 * problems), through the same stages every model goes through: the model initialised, tool
 * solutions written (their code run in the jail), steps on the trainer service, the model
 * exported in Hugging Face layout with the prompt it was trained with, held-out accuracy through
 * the real agent loop, the report. The loss decreases; a resume whose flags contradict the run is
 * refused without writing; a run stopped after a checkpoint and resumed continues at the same
 * step with the same data, weights and optimizer state (its losses equal the uninterrupted run's).
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTrainingPrompt } from '../src/model/index.ts';
import {
  readMetrics,
  resolveSftConfig,
  runSft,
  type SftEvent,
  sftMetricsSchema,
  type TrainingReport,
} from '../src/train/index.ts';

const root = dirname(dirname(fileURLToPath(import.meta.url)));

// Small enough for two shared cores; one torch thread keeps the steps deterministic.
const flags = {
  steps: 8,
  batchSize: 4,
  learningRate: 1e-2,
  warmupSteps: 1,
  trainProblems: 48,
  levels: [1, 2],
  checkpointEvery: 2,
  threads: 1,
  evalProblems: 4,
  evalConcurrency: 4,
};
const cliFlags = [
  '--steps',
  '8',
  '--batch-size',
  '4',
  '--learning-rate',
  '0.01',
  '--problems',
  '48',
  '--levels',
  '1,2',
  '--checkpoint-every',
  '2',
  '--threads',
  '1',
  '--eval-problems',
  '4',
  '--warmup-steps',
  '1',
];

function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(root, 'bin', 'agentmath.js'), ...args],
      { cwd: root, timeout: 170_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let folder: string;
let cliRun: { code: number; stdout: string; stderr: string };
let cliReport: TrainingReport;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'agentmath-sft-'));
  cliRun = await runCli([
    'train',
    'sft',
    '--task',
    'arith',
    ...cliFlags,
    '--out',
    join(folder, 'cli'),
    '--json',
  ]);
  cliReport = JSON.parse(cliRun.stdout) as TrainingReport;
}, 180_000);

afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe('agentmath train sft (the embedded default)', () => {
  it('initialises a byte model, trains it, exports a servable model and writes the report with accuracy by level', async () => {
    expect(cliRun.code, cliRun.stderr).toBe(0);
    const dir = join(folder, 'cli');
    for (const file of [
      'config.json',
      'metrics.jsonl',
      'data-tool.jsonl',
      'training-report.md',
      'init-model/model-init.json',
    ]) {
      expect(existsSync(join(dir, file)), file).toBe(true);
    }
    for (const file of ['config.json', 'model.safetensors', 'tokenizer.json', 'training-prompt.json']) {
      expect(existsSync(join(dir, 'model', file)), `model/${file}`).toBe(true);
    }
    expect(JSON.parse(await readFile(join(dir, 'model', 'config.json'), 'utf8')).model_type).toBe(
      'agentmath-byte-gpt',
    );
    // The byte model is prompted with the problem alone, in tags, and says so.
    expect(await readTrainingPrompt(join(dir, 'model'))).toEqual({ prompt: 'problem-only', dialect: 'tags' });
    const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    // A model `model init` wrote is trained from scratch: its own rate unless given (here 0.01 was).
    expect(config).toMatchObject({
      model: join(dir, 'init-model'),
      learningRate: 0.01,
      prompt: 'problem-only',
      maxSequenceTokens: 768,
    });
    const metrics = await readMetrics(dir);
    expect(metrics.map((line) => line.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    for (const line of metrics) sftMetricsSchema.parse(line);
    expect(cliReport.training.steps).toBe(8);
    expect(cliReport.eval?.problems).toBe(4);
    expect(cliReport.eval?.byLevel.reduce((total, row) => total + row.problems, 0)).toBe(4);
    expect(cliReport.training.tokens).toBeGreaterThan(cliReport.training.trainedTokens);
    expect(await readFile(join(dir, 'training-report.md'), 'utf8')).toContain(
      '| level | problems | correct | accuracy |',
    );
    // Plain progress lines on a pipe (not a TTY): the bar with loss, tokens/s and ETA.
    expect(cliRun.stderr).toMatch(/\] 8\/8 loss \d+\.\d+ .* tok\/s .*ETA/);
    // Only the latest checkpoint is kept.
    expect(readdirSync(join(dir, 'checkpoints'))).toEqual(['step-000008']);
  });

  it('decreases the loss', () => {
    const losses = cliReport.training.history.map((point) => point.loss ?? Number.NaN);
    expect(losses).toHaveLength(8);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! - 0.5);
  });

  it('refuses a --resume whose flags contradict the saved configuration, writing nothing', async () => {
    const dir = join(folder, 'cli');
    const saved = await readFile(join(dir, 'config.json'), 'utf8');
    const refused = await runCli([
      'train',
      'sft',
      '--out',
      dir,
      '--resume',
      '--levels',
      '1,2,3',
      '--batch-size',
      '2',
    ]);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain('levels: saved [1,2], now [1,2,3]');
    expect(refused.stderr).toContain('another --out');
    expect(await readFile(join(dir, 'config.json'), 'utf8')).toBe(saved);
    // Without --resume, the folder is refused: it holds a run.
    const again = await runCli(['train', 'sft', ...cliFlags, '--out', dir]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already holds an `agentmath train sft` run');
  }, 60_000);

  it('resumes from the last checkpoint at the same step with the same data and optimizer state', async () => {
    const dir = join(folder, 'resumed');
    const abort = new AbortController();
    const steps: number[] = [];
    const record = (event: SftEvent) => {
      if (event.type !== 'train-step') return;
      steps.push(event.step);
      if (event.step === 3) abort.abort();
    };
    const config = resolveSftConfig(flags);
    const stopped = await runSft({ out: dir, config, onEvent: record, signal: abort.signal });
    expect(stopped).toMatchObject({ status: 'stopped', step: 3 });
    const finished = await runSft({ out: dir, config, resume: true, onEvent: record });
    expect(steps).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    if (finished.status !== 'finished') throw new Error('the resumed run did not finish');
    // Same batches, weights and AdamW moments as the uninterrupted run: the same losses.
    const expected = cliReport.training.history.map((point) => point.loss);
    const actual = finished.report.training.history.map((point) => point.loss);
    expect(actual).toHaveLength(8);
    for (const [index, loss] of actual.entries()) expect(loss).toBeCloseTo(expected[index]!, 4);
  }, 240_000);
});
