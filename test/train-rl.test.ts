/**
 * `agentmath train rl` end to end, killed with SIGKILL and resumed, on the byte model: one
 * local engine, one trainer rank and a disk sync, as for every model. The model is an untrained
 * byte model of the `test` shape (`model init`; its answers are noise, so every group is
 * all-wrong and dropped: this test is about the run's records, not learning). A run killed
 * after its first step and resumed ends with every step in `metrics.jsonl` exactly once, the
 * committed checkpoint at the last step, and a model checkpoint for each step a resume needs.
 *
 * The second test needs groups that are kept (mixed right and wrong answers), so it trains that
 * model (`train sft --model`) for a few seconds on tool solutions of the very problems the RL run draws
 * (`train rl` takes its pool from the train split seeded `rl:SEED`): the model half knows them,
 * and at T = 1 a group holds both. A run killed with SIGKILL after a committed step and resumed
 * must record the same steps as one that ran through: same samples, same rewards and group
 * decisions, the same training statistics up to float rounding (the engine's logprobs depend on
 * which requests shared a decode batch, at the 1e-6 level). That run skips problems by their
 * history and resamples on correct, so `problem-history.jsonl` and the resampled groups are
 * checked the same way.
 *
 * A SIGINT during a held-out evaluation stops it at once (it does not grade its remaining
 * problems first): the evaluation is recorded missing with its reason, never as 0%, and the
 * command printed to resume runs as printed.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initHfModel } from '../src/model/index.ts';
import { killAllClis, killGroup, startCli } from './cli-process.ts';

let folder: string;
let init: string;
/** A `test`-shape byte model trained on the RL pool's problems (see the file comment). */
let knowing: string;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'agentmath-train-rl-'));
  init = join(folder, 'init');
  await initHfModel({ arch: 'byte-gpt', shape: 'test', out: init });
  const data = join(folder, 'pool-solutions.jsonl');
  knowing = join(folder, 'knowing');
  const commands = [
    [
      'tasks',
      'write-arith',
      '--count',
      '16',
      '--seed',
      'rl:0',
      '--levels',
      '0',
      '--style',
      'tool',
      '--out',
      data,
    ],
    [
      ...[
        'train',
        'sft',
        '--data',
        data,
        '--model',
        init,
        '--steps',
        '100',
        '--batch-size',
        '8',
        '--threads',
        '1',
      ],
      ...['--learning-rate', '0.01', '--warmup-steps', '10', '--eval-problems', '1', '--out', knowing],
    ],
  ];
  for (const command of commands) {
    const result = await startCli(command, { cwd: folder, limitMs: 240_000 }).done;
    expect(result.code, result.stderr).toBe(0);
  }
  knowing = join(knowing, 'model');
}, 360_000);

afterAll(() => {
  killAllClis();
  rmSync(folder, { recursive: true, force: true });
});

const args = (out: string) => [
  'train',
  'rl',
  '--model',
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

  it('stops at once on a SIGINT during the held-out evaluation: the evaluation is missing with its reason, and the printed command resumes the run', async () => {
    const out = join(folder, 'stopped-in-eval');
    const first = startCli([...args(out), '--steps', '2', '--eval-every', '1', '--eval-problems', '80'], {
      cwd: folder,
      limitMs: 240_000,
    });
    const evalRun = join(out, 'eval-runs', 'step-00000');
    // Signal once the evaluation after step 0 has graded its first problem.
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (existsSync(join(evalRun, 'trajectories.jsonl')) || first.child.exitCode !== null) {
          clearInterval(poll);
          resolve();
        }
      }, 50);
    });
    process.kill(first.child.pid!, 'SIGINT');
    const stopped = await first.done;
    expect(stopped.signal, stopped.stderr).toBe('SIGINT');
    // Stopped with problems left, not after evaluating all 80.
    expect(lines(join(evalRun, 'trajectories.jsonl')).length).toBeLessThan(80);
    expect(lines(join(out, 'evals.jsonl'))).toEqual([
      expect.objectContaining({
        step: 0,
        accuracy: null,
        problems: 0,
        missing: expect.stringMatching(/stopped by SIGINT/),
      }),
    ]);
    expect(stopped.stderr).toMatch(/eval after step 0: missing \(stopped by SIGINT/);
    expect(stopped.stderr).not.toMatch(/held-out accuracy 0\.0%/);
    const table = await startCli(['report', out, '--table'], { cwd: folder }).done;
    expect(table.stdout).toMatch(/\| stopped-in-eval \| missing \|/);

    // The command printed to resume runs as it is printed.
    const hint = /resume with:\n {2}(agentmath .*)\n/.exec(stopped.stderr)?.[1];
    expect(hint, stopped.stderr).toBeDefined();
    const words = execFileSync('sh', ['-c', `printf '%s\\n' ${hint!}`], { encoding: 'utf8' })
      .trimEnd()
      .split('\n');
    const resumed = await startCli(words.slice(1), { cwd: folder, limitMs: 240_000 }).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(lines(join(out, 'metrics.jsonl')).map((line) => line.step)).toEqual([0, 1]);
    const evals = lines(join(out, 'evals.jsonl'));
    expect(evals.map((line) => [line.step, line.missing === undefined])).toEqual([
      [0, false],
      [1, true],
    ]);
    expect(evals[1]?.problems).toBe(80);
  }, 600_000);

  it('end to end: on-policy at --temperature 0.8 the ratio is 1, and a resumed run with --kl-coef computes KL against --model', async () => {
    const options =
      // behaviour: the ratio is taken against the engine's logprobs, which is what this checks
      // (with recompute it is 1 by construction).
      '--levels 0 --problems 16 --batch-size 2 --group-size 8 --mode sync --seed 0 --temperature 0.8 --kl-coef 0.1 --partial-rollouts 1 --proximal behaviour';
    const run = (steps: number) => [
      ...['train', 'rl', '--model', knowing, ...options.split(' '), '--steps', String(steps)],
      ...['--eval-every', '0', '--eval-problems', '2', '--out', join(folder, 'kl-resumed')],
    ];
    const first = await startCli(run(1), { cwd: folder, limitMs: 240_000 }).done;
    expect(first.code, first.stderr).toBe(0);
    const resumed = await startCli([...run(2), '--resume'], { cwd: folder, limitMs: 240_000 }).done;
    expect(resumed.code, resumed.stderr).toBe(0);

    const [step0, step1] = lines(join(folder, 'kl-resumed', 'metrics.jsonl'));
    // Step 0 trained on fresh tokens sampled at T = 0.8: ratio 1 up to float noise, no clipping,
    // and the policy is still the reference.
    expect(step0?.groupsKept as number).toBeGreaterThan(0);
    expect(Math.abs(step0?.approxKl as number)).toBeLessThan(1e-5);
    expect(step0?.clipFraction).toBe(0);
    expect(Math.abs(step0?.klRef as number)).toBeLessThan(1e-5);
    // Step 1, in a worker started by the resume from the step-1 checkpoint: the KL to --model is
    // that of one update away (the old worker built its reference from the weights it resumed
    // from, and the KL of the step's first forward pass was 0).
    expect(step1?.step).toBe(1);
    expect(step1?.groupsKept as number).toBeGreaterThan(0);
    expect(step1?.klRef as number).toBeGreaterThan(1e-6);
  }, 600_000);

  it('records the same steps when killed with SIGKILL and resumed as when run through', async () => {
    // With the problem history's skipping and resample-on-correct on: their records resume too.
    const options =
      '--levels 0 --problems 16 --steps 5 --batch-size 2 --group-size 4 --mode sync --seed 0 --skip-history --skip-base 0.6 --resample-on-correct 1.5';
    const run = (out: string) => [
      ...['train', 'rl', '--model', knowing, ...options.split(' ')],
      ...['--eval-every', '0', '--eval-problems', '2', '--out', out],
    ];
    const through = join(folder, 'through');
    const whole = await startCli(run(through), { cwd: folder, limitMs: 240_000 }).done;
    expect(whole.code, whole.stderr).toBe(0);

    const cut = join(folder, 'cut');
    const first = startCli(run(cut), { cwd: folder, limitMs: 240_000 });
    const checkpoint = join(cut, 'checkpoint.json');
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        const committed = existsSync(checkpoint)
          ? (JSON.parse(readFileSync(checkpoint, 'utf8')) as { nextStep: number }).nextStep
          : 0;
        if (committed >= 2 || first.child.exitCode !== null) {
          clearInterval(poll);
          resolve();
        }
      }, 50);
    });
    killGroup(first.child);
    await first.done;
    const resumed = await startCli([...run(cut), '--resume'], { cwd: folder, limitMs: 240_000 }).done;
    expect(resumed.code, resumed.stderr).toBe(0);

    const expected = lines(join(through, 'metrics.jsonl'));
    const actual = lines(join(cut, 'metrics.jsonl'));
    expect(actual.map((line) => line.step)).toEqual([0, 1, 2, 3, 4]);
    // The comparison means something only if the policy trained.
    expect(expected.some((line) => (line.groupsKept as number) > 0)).toBe(true);
    const WALL_CLOCK_FIELDS = new Set([
      'rolloutMs',
      'trainMs',
      'weightSyncMs',
      'engineIdleMs',
      'trainerIdleMs',
    ]);
    const trainingStatistics = new Set([
      'approxKl',
      'gradNorm',
      'entropy',
      'clipFraction',
      'offPolicyWeight',
    ]);
    // The engine-vs-trainer logprob gap of tokens sampled by the weights a step trains from is
    // float noise whose size depends on how the engine batched the requests, which timing decides
    // (seen: a max of 1.2e-5 in one run, 1.8e-5 in the other). What resuming must keep is that it
    // stays noise: an engine left with stale weights after the resume would show the policy's
    // change (1e-2 and more), as a bf16 engine would (1.4e-2). Segments sampled by older weights
    // (a partial rollout carried over an update) show that change by design (CI saw a mean of
    // 1.1e-2 when they were counted together): their gap must match the run through's.
    const gapFields = new Set(['rolloutLogprobGap']);
    const staleGapFields = new Set(['staleLogprobGap']);
    const FLOAT32_NOISE = 1e-3;
    expected.forEach((want, index) => {
      const got = actual[index] as Record<string, unknown>;
      for (const [key, value] of Object.entries(want)) {
        if (WALL_CLOCK_FIELDS.has(key)) continue;
        if (trainingStatistics.has(key) && typeof value === 'number') {
          expect(got[key], `step ${index} ${key}`).toBeCloseTo(value, 5);
        } else if (gapFields.has(key) && value !== null && typeof value === 'object') {
          for (const [part, number] of Object.entries(value as Record<string, number>)) {
            expect(number, `step ${index} ${key}.${part} run through`).toBeLessThan(FLOAT32_NOISE);
            expect((got[key] as Record<string, number>)[part], `step ${index} ${key}.${part}`).toBeLessThan(
              FLOAT32_NOISE,
            );
          }
        } else if (staleGapFields.has(key) && value !== null && typeof value === 'object') {
          for (const [part, number] of Object.entries(value as Record<string, number>)) {
            const resumedValue = (got[key] as Record<string, number>)[part] as number;
            expect(Math.abs(resumedValue - number), `step ${index} ${key}.${part}`).toBeLessThan(
              FLOAT32_NOISE,
            );
          }
        } else {
          expect(got[key], `step ${index} ${key}`).toEqual(value);
        }
      }
    });
    // The same tokens sampled for the same problem and sample index at every step.
    const samples = (out: string) =>
      lines(join(out, 'trajectories.jsonl'))
        .map((line) => {
          const { problemId, sample, segments } = line as {
            problemId: string;
            sample: number;
            segments: { tokenIds?: number[] }[];
          };
          const tokens = segments.map((segment) => segment.tokenIds?.join(',') ?? '').join('|');
          return `${problemId} ${sample} ${tokens}`;
        })
        .sort();
    expect(samples(cut)).toEqual(samples(through));
    // Every group decided and every problem skipped is in the history once, as in the run through.
    const history = (out: string) =>
      lines(join(out, 'problem-history.jsonl'))
        .map((line) => JSON.stringify(line))
        .sort();
    expect(history(cut)).toEqual(history(through));
    expect(new Set(history(cut)).size).toBe(history(cut).length);
    const groups = lines(join(through, 'groups.jsonl'));
    expect(groups.every((group) => (group.trajectoryIds as string[]).length === 4)).toBe(true);
    expect(groups.some((group) => (group.resampled as { sampled: number } | undefined)?.sampled === 6)).toBe(
      true,
    );
  }, 600_000);
});
