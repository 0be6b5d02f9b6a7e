/**
 * `agentmath report` named the wrong thing: `--out` naming a folder is a usage
 * error (exit 2) instead of a raw EISDIR, and a rollout or synthesis run folder is named for
 * what it is, with the kinds of run `report` reads, instead of "trajectory … has no grade";
 * `--table` on a `train sft --model` run (its metrics.jsonl holds losses) is exit 2, not NaN
 * rows; a folder that holds no run is refused, with or without `--table`, instead
 * of a row of zeros; a held-out evaluation that did not run shows as missing, never 0.0%.
 */
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllClis, startCli } from './cli-process.ts';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'report-checks-'));
});

afterAll(async () => {
  killAllClis();
  await rm(dir, { recursive: true, force: true });
});

const report = (args: string[]) => startCli(['report', ...args], { cwd: dir }).done;

describe('agentmath report: the wrong folder', () => {
  it('refuses --out naming a folder with exit 2', async () => {
    const run = join(dir, 'any-run');
    await mkdir(run);
    const result = await report([run, '--out', dir]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--out .* is a folder; give the page's file name/);
    expect(result.stderr).not.toMatch(/EISDIR/);
  });

  it('names a rollout run and a synthesis run as kinds it does not read', async () => {
    const rollout = join(dir, 'rollout');
    await mkdir(rollout);
    await writeFile(join(rollout, 'config.json'), '{"command":"rollout"}\n');
    await writeFile(join(rollout, 'groups.jsonl'), '');
    await writeFile(join(rollout, 'trajectories.jsonl'), '');
    const synth = join(dir, 'synth');
    await mkdir(synth);
    await writeFile(join(synth, 'synth-run.json'), '{}\n');
    await writeFile(join(synth, 'trajectories.jsonl'), '');
    for (const [folder, kind] of [
      [rollout, 'an `agentmath rollout` run'],
      [synth, 'an `agentmath synth run` folder'],
    ] as const) {
      const result = await report([folder]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`is ${kind}; report reads eval runs`);
      expect(result.stderr).not.toMatch(/has no grade/);
    }
  });
});

describe('agentmath report --table', () => {
  it('prints a train rl run as Markdown tables, and refuses --target without --table', async () => {
    const run = join(dir, 'rl-run');
    await mkdir(run);
    const metrics = [0, 1, 2].map((step) => ({
      step,
      accuracy: 0.1 * step,
      codeFrequency: 0.2,
      responseTokensMean: 100 + step,
      selfCorrectionRate: 0,
      groupsKept: 1,
      groupsDropped: 2,
    }));
    await writeFile(join(run, 'metrics.jsonl'), metrics.map((line) => `${JSON.stringify(line)}\n`).join(''));
    const byLevel = [{ level: 0, problems: 4, correct: 1, accuracy: 0.25 }];
    await writeFile(
      join(run, 'evals.jsonl'),
      `${JSON.stringify({ step: 2, policyVersion: 3, accuracy: 0.25, codeFrequency: 0.5, toolCallsPerTrajectory: 0.5, responseTokensMean: 90, byLevel, problems: 4, wallMs: 1 })}\n`,
    );
    const table = await report([run, '--table', '--target', '0.2']);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('| rl-run | 25.0% | 25.0% | 50.0% → 50.0% | 2 |');
    expect(table.stdout).toContain('| rl-run | 3 | 5.0% → 20.0% |');

    const alone = await report([run, '--target', '0.2']);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/--target goes with --table/);
  });

  it('shows an evaluation that did not run as missing, never as 0.0%', async () => {
    const run = join(dir, 'rl-missing-eval');
    await mkdir(run);
    await writeFile(
      join(run, 'metrics.jsonl'),
      `${JSON.stringify({ step: 0, accuracy: 0.5, codeFrequency: 1, groupsKept: 1, groupsDropped: 0 })}\n`,
    );
    const missing = {
      step: 0,
      policyVersion: 1,
      accuracy: null,
      problems: 0,
      missing: 'stopped by SIGINT',
      wallMs: 9,
    };
    await writeFile(join(run, 'evals.jsonl'), `${JSON.stringify(missing)}\n`);
    const table = await report([run, '--table', '--target', '0.1']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain('| rl-missing-eval | missing | – | – | not reached |');
    expect(table.stdout).not.toMatch(/[^\d]0\.0%/);
    const page = await report([run]);
    expect(page.code, page.stderr).toBe(0);
    expect(readFileSync(join(run, 'report.html'), 'utf8')).toContain('missing: stopped by SIGINT');
  });
});

describe('agentmath report on a folder that holds no run', () => {
  it('refuses it with and without --table, and as a --compare run, printing no row', async () => {
    const notes = join(dir, 'notes');
    await mkdir(notes);
    await writeFile(join(notes, 'plan.md'), 'mine\n');
    const evalRun = join(dir, 'eval-run');
    await mkdir(evalRun);
    await writeFile(join(evalRun, 'trajectories.jsonl'), '');
    for (const args of [[notes, '--table'], [notes], [evalRun, '--compare', notes, '--table']]) {
      const result = await report(args);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        `${notes} holds neither summary.json nor trajectories.jsonl: not a run`,
      );
      expect(result.stdout).toBe('');
    }
  });
});

describe('agentmath report --table on a run that is not train rl', () => {
  it('refuses a train sft --model run with exit 2 instead of NaN rows', async () => {
    const run = join(dir, 'sft-run');
    await mkdir(run);
    await writeFile(join(run, 'config.json'), `${JSON.stringify({ model: '/m', data: '/d', steps: 2 })}\n`);
    // What train sft --model writes (src/train/hf-sft-run.ts, HfSftMetrics).
    const lines = [1, 2].map((step) => ({
      step,
      loss: 6.4,
      tokens: 400,
      learningRate: 1e-4,
      gradNorm: 1.1,
      tokensPerSecond: 300,
      stepMs: 1300,
      skipped: false,
    }));
    await writeFile(join(run, 'metrics.jsonl'), lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
    const table = await report([run, '--table']);
    expect(table.code).toBe(2);
    expect(table.stderr).toMatch(
      /--table reads train rl runs or eval runs; .*sft-run is an `agentmath train sft` run/,
    );
    expect(table.stdout).not.toMatch(/NaN/);
    const page = await report([run]);
    expect(page.code).toBe(1);
    expect(page.stderr).toMatch(/is an `agentmath train sft` run; report reads eval runs/);
  });
});
