/**
 * `agentmath train rl` refusals that must come before its PyTorch worker and sandbox start
 * (issue 29): a missing `--init` folder is named as missing, and a `--resume` whose options
 * differ from the saved run exits 2 (run identity) without starting anything — the worker is
 * never asked to load the (fake) model folder used here, so a start would fail differently.
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
  it('says the --init folder does not exist', async () => {
    const missing = join(dir, 'missing-model');
    const result = await startCli(['train', 'rl', '--init', missing, '--out', join(dir, 'run')], { cwd: dir })
      .done;
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/model folder .*missing-model \(--init\) does not exist/);
    expect(result.stderr).not.toMatch(/no config\.json/);
  });

  it('refuses a --resume with other defining options with exit 2, naming the field', async () => {
    const model = join(dir, 'model');
    await mkdir(model);
    await writeFile(join(model, 'config.json'), '{}\n');
    const out = join(dir, 'resumed');
    await mkdir(out);
    await writeFile(join(out, 'config.json'), `${JSON.stringify({ command: 'train rl', seed: 99 })}\n`);
    const result = await startCli(['train', 'rl', '--init', model, '--out', out, '--resume'], { cwd: dir })
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
        '--init',
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
      ['train', 'rl', '--init', model, '--out', out, '--rollout-is-threshold-lower', '0.5'],
      { cwd: dir },
    ).done;
    expect(lower.code).toBe(2);
    expect(lower.stderr).toMatch(/only --rollout-correction mis has a lower threshold/);
    await expect(readFile(join(out, 'config.json'), 'utf8')).rejects.toThrow();
  });
});
