/**
 * `agentmath train rl` refusals that must come before its PyTorch worker and sandbox start
 *: a missing `--model` folder is named as missing, and a `--resume` whose options
 * differ from the saved run exits 2 (run identity) without starting anything — the worker is
 * never asked to load the (fake) model folder used here, so a start would fail differently.
 * Options that would be recorded and used for nothing (`--skip-base` without `--skip-history`,
 * the code-call bonus with `--reward accuracy`) are exit 2; `--init` is gone (`--model` names
 * every model); `--resume` takes the saved run's options for those not given.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllClis, startCli } from './cli-process.ts';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'train-rl-checks-'));
});

afterAll(async () => {
  killAllClis();
  await rm(dir, { recursive: true, force: true });
});

describe('agentmath train rl: refusals before anything starts', () => {
  it('says the --model folder does not exist', async () => {
    const missing = join(dir, 'missing-model');
    const result = await startCli(['train', 'rl', '--model', missing, '--out', join(dir, 'run')], {
      cwd: dir,
    }).done;
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/model folder .*missing-model \(--model\) does not exist/);
    expect(result.stderr).not.toMatch(/no config\.json/);
  });

  it('refuses a --resume with other defining options with exit 2, naming the field', async () => {
    const model = join(dir, 'model');
    await mkdir(model);
    await writeFile(join(model, 'config.json'), '{}\n');
    const out = join(dir, 'resumed');
    await mkdir(out);
    await writeFile(join(out, 'config.json'), `${JSON.stringify({ command: 'train rl', seed: 99 })}\n`);
    const result = await startCli(['train', 'rl', '--model', model, '--out', out, '--resume'], { cwd: dir })
      .done;
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/\[RUN_IDENTITY_MISMATCH\] cannot resume/);
    expect(result.stderr).not.toMatch(/train rl: with tools from/); // the run never started
    expect(await readFile(join(out, 'config.json'), 'utf8')).toContain('"seed":99');
  });

  it('refuses a rollout correction without the trainer-side logprobs it weighs by, with exit 2', async () => {
    const model = join(dir, 'model');
    const out = join(dir, 'correction');
    const behaviour = await startCli(
      [
        'train',
        'rl',
        '--model',
        model,
        '--out',
        out,
        '--proximal',
        'behaviour',
        '--rollout-correction',
        'mis',
      ],
      { cwd: dir },
    ).done;
    expect(behaviour.code).toBe(2);
    expect(behaviour.stderr).toMatch(/--rollout-correction: .*--proximal behaviour does not compute/);
    const lower = await startCli(
      ['train', 'rl', '--model', model, '--out', out, '--rollout-is-threshold-lower', '0.5'],
      { cwd: dir },
    ).done;
    expect(lower.code).toBe(2);
    expect(lower.stderr).toMatch(
      /--rollout-is-threshold-lower: has no effect without --rollout-correction mis \(only mis has a lower threshold\)/,
    );
    await expect(readFile(join(out, 'config.json'), 'utf8')).rejects.toThrow();
  });

  it('refuses options that would be recorded and used for nothing, and --init, with exit 2', async () => {
    const model = join(dir, 'model');
    const out = join(dir, 'unused');
    await mkdir(model, { recursive: true });
    await writeFile(join(model, 'config.json'), '{}\n');
    const cases: [string[], RegExp][] = [
      [['--skip-base', '0.5'], /--skip-base: has no effect without --skip-history/],
      [
        ['--skip-max', '0.9', '--explore', '0.2'],
        /--skip-max, --explore: have no effect without --skip-history/,
      ],
      [
        ['--reward', 'accuracy', '--tool-reward-beta', '0.1'],
        /--tool-reward-beta: has no effect without --reward composite/,
      ],
      [['--init', model], /unknown option '--init'/],
    ];
    for (const [extra, message] of cases) {
      const result = await startCli(['train', 'rl', '--model', model, '--out', out, ...extra], { cwd: dir })
        .done;
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
    }
    const given = await startCli(
      ['train', 'rl', '--model', model, '--out', out, '--skip-history', '--skip-base', '2'],
      {
        cwd: dir,
      },
    ).done;
    expect(given.stderr).toMatch(/--skip-base <p>' argument '2' is invalid/);
    await expect(readFile(join(out, 'config.json'), 'utf8')).rejects.toThrow();
  });

  it('--resume takes the saved options for those not given: only a given one that differs is refused', async () => {
    const model = join(dir, 'model');
    const out = join(dir, 'saved-options');
    await mkdir(model, { recursive: true });
    await writeFile(join(model, 'config.json'), '{}\n');
    await mkdir(out, { recursive: true });
    // The run as config.json holds it: every defining option, some of them not the defaults.
    const { rlConfigSchema, rlDefiningConfig } = await import('../src/train/index.ts');
    const saved = rlDefiningConfig(rlConfigSchema.parse({ init: model, seed: 7, groupSize: 4, levels: [2] }));
    await writeFile(join(out, 'config.json'), `${JSON.stringify(saved)}\n`);
    const changed = await startCli(['train', 'rl', '--out', out, '--resume', '--group-size', '6'], {
      cwd: dir,
    }).done;
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(/RUN_IDENTITY_MISMATCH[\s\S]*groupSize: saved 4, now 6/);
    expect(changed.stderr).not.toMatch(/seed|levels/);
  });
});
