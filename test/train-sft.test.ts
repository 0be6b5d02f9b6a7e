/**
 * SFT end to end on the `test` preset (a few steps, a few dozen problems): the CLI writes a
 * report after training through the real worker and evaluating through the real agent loop
 * and sandbox; the loss decreases; the batches recorded on the wire to the worker mask the
 * prompt and interpreter output and nothing else; a run
 * interrupted after a checkpoint and resumed continues at the same step with the same data,
 * weights and optimizer state (its losses equal the uninterrupted run's).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskSolutionSchema } from '../src/tasks/index.ts';
import {
  readSftState,
  runSft,
  type SftConfigInput,
  type SftEvent,
  SftInterruptedError,
  type TrainingReport,
} from '../src/train/index.ts';

const root = dirname(dirname(fileURLToPath(import.meta.url)));

// Small enough for two shared cores; one torch thread keeps the steps deterministic.
const config = {
  model: 'test',
  steps: 8,
  batchSize: 4,
  learningRate: 1e-2,
  warmupSteps: 1,
  trainProblems: 48,
  levels: [1, 2],
  checkpointEvery: 2,
  trainThreads: 1,
  evalProblems: 4,
  evalConcurrency: 4,
} satisfies SftConfigInput;

const cliFlags = [
  '--model',
  'test',
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
      { cwd: root, timeout: 50_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let folder: string;
/** `/train/sft_step` bodies as sent on the wire (snake_case), recorded by the resume test's first run. */
type SentStep = { sequences: Array<{ input_ids: number[]; loss_mask: number[] }> };
const sentSteps: SentStep[] = [];
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
}, 60_000);

afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe('agentmath train sft', () => {
  it('trains, saves a servable model folder and writes the report with accuracy by level', async () => {
    expect(cliRun.code, cliRun.stderr).toBe(0);
    const dir = join(folder, 'cli');
    for (const file of [
      'config.json',
      'pytorch_model.bin',
      'tokenizer.json',
      'training-report.md',
      'sft-state.json',
    ]) {
      expect(existsSync(join(dir, file)), file).toBe(true);
    }
    const onDisk = JSON.parse(await readFile(join(dir, 'training-report.json'), 'utf8')) as TrainingReport;
    expect(onDisk.training.steps).toBe(8);
    expect(onDisk.eval.problems).toBe(4);
    expect(onDisk.eval.byLevel.reduce((total, row) => total + row.problems, 0)).toBe(4);
    expect(onDisk.training.tokens).toBeGreaterThan(onDisk.training.trainedTokens);
    expect(await readFile(join(dir, 'training-report.md'), 'utf8')).toContain(
      '| level | problems | correct | accuracy |',
    );
    // Plain progress lines on a pipe (not a TTY): the bar with loss, tokens/s and ETA.
    expect(cliRun.stderr).toMatch(/\] 8\/8 loss \d+\.\d+ .* tok\/s .*ETA/);
    // Only the latest checkpoint is kept.
    expect((await readSftState(dir))?.checkpoint).toBe('checkpoints/step-8');
    expect(existsSync(join(dir, 'checkpoints', 'step-6'))).toBe(false);
  });

  it('refuses a --resume whose flags contradict the saved configuration, writing nothing', async () => {
    const dir = join(folder, 'cli');
    const state = await readFile(join(dir, 'sft-state.json'), 'utf8');
    const refused = await runCli([
      'train',
      'sft',
      '--out',
      dir,
      '--resume',
      '--steps',
      '9',
      '--levels',
      '1,2,3',
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('steps: saved 8, now 9');
    expect(refused.stderr).toContain('levels: saved [1,2], now [1,2,3]');
    expect(refused.stderr).toContain('another --out');
    expect(await readFile(join(dir, 'sft-state.json'), 'utf8')).toBe(state);
  });

  it('decreases the loss', () => {
    const losses = cliReport.training.history.map((point) => point.loss);
    expect(losses).toHaveLength(8);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! - 0.5);
  });

  it('resumes from the last checkpoint at the same step with the same data and optimizer state', async () => {
    const dir = join(folder, 'resumed');
    const abort = new AbortController();
    const steps: number[] = [];
    const record = (event: SftEvent) => {
      if (event.type !== 'train-step') return;
      steps.push(event.step);
      if (event.step === 3) abort.abort();
    };
    const recorder: typeof fetch = async (input, init) => {
      if (String(input).endsWith('/train/sft_step'))
        sentSteps.push(JSON.parse(String(init?.body)) as SentStep);
      return fetch(input, init);
    };
    await expect(
      runSft({ dir, config, onEvent: record, signal: abort.signal, trainerFetch: recorder }),
    ).rejects.toBeInstanceOf(SftInterruptedError);
    const state = await readSftState(dir);
    expect(state?.step).toBe(3);
    expect(state?.checkpoint).toBe('checkpoints/step-3');
    await expect(runSft({ dir, config })).rejects.toThrow(/--resume/);

    const report = await runSft({ dir, resume: true, onEvent: record });
    expect(steps).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(report.training.steps).toBe(8);
    // Same batches, weights and AdamW moments as the uninterrupted run: the same losses.
    const expected = cliReport.training.history.map((point) => point.loss);
    const actual = report.training.history.map((point) => point.loss);
    expect(actual).toHaveLength(8);
    for (const [index, loss] of actual.entries()) expect(loss).toBeCloseTo(expected[index]!, 4);
  }, 60_000);
  it('sends the worker sequences whose prompt and interpreter tokens, and only those, have loss mask 0', async () => {
    // The bodies recorded on the wire by the resumed run's first invocation (steps 1-3).
    expect(sentSteps.length).toBeGreaterThanOrEqual(3);
    const lines = (await readFile(join(folder, 'resumed', 'data-tool.jsonl'), 'utf8')).trim().split('\n');
    const solutions = lines.map((line) => taskSolutionSchema.parse(JSON.parse(line)));
    const decode = (ids: number[]) => Buffer.from(ids.filter((id) => id < 256)).toString('utf8');
    let checked = 0;
    for (const body of sentSteps) {
      expect(body.sequences).toHaveLength(4);
      for (const sequence of body.sequences) {
        expect(sequence.loss_mask).toHaveLength(sequence.input_ids.length);
        const text = decode(sequence.input_ids);
        const solution = solutions.find((candidate) => text.includes(`\n${candidate.problem.problem}\n`));
        expect(solution, text.slice(0, 80)).toBeDefined();
        const tool = solution!.segments.find((segment) => segment.kind === 'tool')!.text;
        expect(tool).toMatch(/^\n<interpreter>\n.*\n<\/interpreter>\n$/s);
        const masked = decode(sequence.input_ids.filter((_, index) => sequence.loss_mask[index] === 0));
        const trained = decode(sequence.input_ids.filter((_, index) => sequence.loss_mask[index] === 1));
        // Prompt, then the interpreter output: nothing else is masked, and no interpreter byte is trained.
        expect(masked).toBe(`<|user|>\n${solution!.problem.problem}\n<|assistant|>\n${tool}`);
        expect(trained).not.toContain('<interpreter>');
        expect(trained).toContain('\\boxed{');
        checked++;
      }
    }
    expect(checked).toBe(4 * sentSteps.length);
  });
});
