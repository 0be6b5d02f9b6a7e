/**
 * `agentmath train rl` end to end, killed with SIGKILL and resumed. The model is the worker's
 * untrained `test` preset saved as a model folder (its answers are noise, so every group is
 * all-wrong and dropped: this test is about the run's records, not learning). A run killed
 * after its first step and resumed ends with every step in `metrics.jsonl` exactly once, the
 * committed checkpoint at the last step, and a model checkpoint for each step a resume needs.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedWorker } from '../src/engine/embedded/index.ts';
import { TrainerClient } from '../src/train/index.ts';
import { killAllClis, killGroup, startCli } from './cli-process.ts';

let folder: string;
let init: string;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'agentmath-train-rl-'));
  init = join(folder, 'init');
  const worker = await startEmbeddedWorker({
    model: 'test',
    decodeThreads: 1,
    trainThreads: 1,
    restart: false,
  });
  try {
    await new TrainerClient({ baseUrl: worker.url }).saveCheckpoint(init);
  } finally {
    await worker.stop();
  }
}, 120_000);

afterAll(() => {
  killAllClis();
  rmSync(folder, { recursive: true, force: true });
});

const args = (out: string) => [
  'train',
  'rl',
  '--init',
  init,
  '--steps',
  '3',
  '--batch-size',
  '1',
  '--group-size',
  '2',
  '--problems',
  '2',
  '--levels',
  '1',
  '--eval-every',
  '0',
  '--eval-problems',
  '2',
  '--out',
  out,
];

const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('agentmath train rl', () => {
  it('resumes after kill -9 with no step lost or done twice', async () => {
    const out = join(folder, 'run');
    const first = startCli(args(out), { cwd: folder, limitMs: 240_000 });
    // Kill as soon as step 0 is committed.
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (existsSync(join(out, 'checkpoint.json')) || first.child.exitCode !== null) {
          clearInterval(poll);
          resolve();
        }
      }, 100);
    });
    killGroup(first.child);
    await first.done;
    const committed = JSON.parse(readFileSync(join(out, 'checkpoint.json'), 'utf8')) as { nextStep: number };
    expect(committed.nextStep).toBeGreaterThanOrEqual(1);

    const second = await startCli([...args(out), '--resume'], { cwd: folder, limitMs: 240_000 }).done;
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/resuming at step \d/);
    expect(lines(join(out, 'metrics.jsonl')).map((line) => line.step)).toEqual([0, 1, 2]);
    expect(lines(join(out, 'steps.jsonl')).map((line) => line.step)).toEqual([0, 1, 2]);
    expect(lines(join(out, 'evals.jsonl')).map((line) => line.step)).toEqual([2]);
    const metric = lines(join(out, 'metrics.jsonl'))[0] as Record<string, unknown>;
    for (const field of [
      'policyVersion',
      'rewardMean',
      'accuracy',
      'codeFrequency',
      'truncationRate',
      'groupsKept',
      'groupsDropped',
      'rolloutMs',
      'trainMs',
      'stage',
    ]) {
      expect(metric).toHaveProperty(field);
    }
    expect(JSON.parse(readFileSync(join(out, 'checkpoint.json'), 'utf8')).nextStep).toBe(3);
    expect(existsSync(join(out, 'model', 'config.json'))).toBe(true);

    // A resume with a different defining option is refused and writes nothing.
    const refused = await startCli([...args(out), '--resume', '--group-size', '4'], { cwd: folder }).done;
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/groupSize/);
  }, 600_000);
});
