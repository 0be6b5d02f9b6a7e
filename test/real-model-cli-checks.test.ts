/**
 * The real-model commands as a careful user meets them, through the real CLI with a
 * tiny `model init` model and `tasks write-arith` data:
 * - `model init --out` never deletes what it did not write: a user's `DIR.tmp` survives, a
 *   folder of other files is refused (exit 2, `--force` overrides), a file or a link to one is
 *   refused naming `--out`, and nothing is left behind;
 * - `train sft --model`: `--out FILE` is exit 2; a failed start (bad `--data`) leaves no run
 *   identity, so the corrected command starts (its data with a UTF-8 BOM on line 1); a second
 *   `--resume` on the live run is refused by `run.lock` and leaves its files alone; a SIGINT is
 *   a stop, not `[HF_SFT_FAILED]`, and prints the exact command that resumes (that a resume
 *   continues a run: test/train-sft-model.test.ts);
 *   a corrupt saved `config.json` on `--resume` is `RUN_CONFIG_INVALID` naming the file; a run
 *   without `--resume`, `--resume` without a run and a folder of other files are exit 2
 *   (`RUN_FOLDER_REFUSED`); a sequence is measured against the model's context when shorter.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllClis, startCli } from './cli-process.ts';
import { metricSteps } from './metric-steps.ts';

let folder: string;
let model: string;
let data: string;

const cli = (args: string[], limitMs = 150_000) => startCli(args, { cwd: folder, limitMs });

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'agentmath-real-model-checks-'));
  model = join(folder, 'qwen3');
  data = join(folder, 'arith-text.jsonl');
  // A folder of the user's that an older `model init` used as its scratch name.
  await mkdir(`${model}.tmp`);
  await writeFile(join(`${model}.tmp`, 'notes.md'), 'mine\n');
  const init = await cli([
    'model',
    'init',
    '--arch',
    'qwen3',
    '--out',
    model,
    '--hidden',
    '32',
    '--seed',
    '3',
  ]).done;
  expect(init.code, init.stderr).toBe(0);
  const written = await cli([
    'tasks',
    'write-arith',
    '--out',
    data,
    '--count',
    '8',
    '--levels',
    '1',
    '--style',
    'text',
  ]).done;
  expect(written.code, written.stderr).toBe(0);
}, 300_000);

afterAll(async () => {
  killAllClis();
  await rm(folder, { recursive: true, force: true });
});

/** Entries of `folder` other than the ones a test made itself. */
const leftovers = () =>
  readdirSync(folder).filter((name) => name.includes('model-init') || name.endsWith('.tmp'));

describe('model init --out', () => {
  it("leaves a user's DIR.tmp alone and writes nothing but DIR", async () => {
    expect(readFileSync(join(`${model}.tmp`, 'notes.md'), 'utf8')).toBe('mine\n');
    expect(existsSync(join(model, 'model.safetensors'))).toBe(true);
    expect(leftovers()).toEqual(['qwen3.tmp']);
  });

  it('refuses a folder of other files with exit 2 (nothing changed), and replaces it with --force', async () => {
    const notes = join(folder, 'notes');
    await mkdir(notes);
    await writeFile(join(notes, 'plan.md'), 'my plan\n');
    const refused = await cli(['model', 'init', '--arch', 'qwen3', '--out', notes, '--hidden', '32']).done;
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /--out .*notes holds files that `agentmath model init` did not write \(plan\.md/,
    );
    expect(readdirSync(notes)).toEqual(['plan.md']);
    const forced = await cli([
      'model',
      'init',
      '--arch',
      'qwen3',
      '--out',
      notes,
      '--hidden',
      '32',
      '--force',
    ]).done;
    expect(forced.code, forced.stderr).toBe(0);
    expect(readdirSync(notes)).not.toContain('plan.md');
    expect(readdirSync(notes)).toContain('model.safetensors');
    expect(leftovers()).toEqual(['qwen3.tmp']);
  }, 120_000);

  it('refuses a file and a link to a file, naming --out, and leaves nothing behind', async () => {
    const file = join(folder, 'a-file');
    await writeFile(file, 'keep\n');
    const link = join(folder, 'a-link');
    await symlink(file, link);
    for (const out of [file, link, join(file, 'inside')]) {
      const result = await cli(['model', 'init', '--arch', 'qwen3', '--out', out, '--hidden', '32']).done;
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/\[RUN_FOLDER_REFUSED\] --out .* is a file/);
      expect(result.stderr).not.toMatch(/ENOTDIR|EEXIST|Traceback/);
    }
    expect(readFileSync(file, 'utf8')).toBe('keep\n');
    expect(leftovers()).toEqual(['qwen3.tmp']);
  }, 60_000);
});

/** Far more than run before the test's SIGINT: a step of this model takes a fraction of a second. */
const STEPS = 400;

const sftArgs = (out: string, dataFile: string, extra: string[] = []) => [
  'train',
  'sft',
  '--model',
  model,
  '--data',
  dataFile,
  '--out',
  out,
  '--steps',
  String(STEPS),
  '--batch-size',
  '2',
  '--checkpoint-every',
  '1',
  '--micro-batch-tokens',
  '512',
  ...extra,
];

describe('train sft --model', () => {
  it('refuses --out FILE with exit 2, naming the option', async () => {
    const file = join(folder, 'out-file');
    await writeFile(file, 'keep\n');
    const result = await cli(sftArgs(file, data)).done;
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--out .*out-file is a file/);
    expect(readFileSync(file, 'utf8')).toBe('keep\n');
  });

  it('refuses, with exit 2 and RUN_FOLDER_REFUSED, a run without --resume, --resume without a run, a folder of other files', async () => {
    const run = join(folder, 'refusals');
    await mkdir(join(run, 'held'), { recursive: true });
    await writeFile(join(run, 'held', 'config.json'), '{}\n');
    await mkdir(join(run, 'notes'));
    await writeFile(join(run, 'notes', 'plan.md'), 'mine\n');
    const cases: [string[], RegExp][] = [
      [sftArgs(join(run, 'held'), data), /held already holds an `agentmath train sft` run: pass --resume/],
      [[...sftArgs(join(run, 'none'), data), '--resume'], /none\/config\.json does not exist: there is no/],
      [sftArgs(join(run, 'notes'), data), /notes holds files that `agentmath train sft` did not write/],
    ];
    for (const [args, message] of cases) {
      const result = await cli(args).done;
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(/\[RUN_FOLDER_REFUSED\]/);
      expect(result.stderr).toMatch(message);
    }
    expect(readdirSync(join(run, 'held'))).toEqual(['config.json']);
    expect(readdirSync(join(run, 'notes'))).toEqual(['plan.md']);
    expect(existsSync(join(run, 'none'))).toBe(false);
  });

  it("measures a sequence against the model's context when it is shorter than --max-sequence-tokens", async () => {
    const short = join(folder, 'short-context');
    await mkdir(short);
    for (const name of readdirSync(model)) await symlink(join(model, name), join(short, name));
    const config = JSON.parse(readFileSync(join(model, 'config.json'), 'utf8'));
    await rm(join(short, 'config.json'));
    await writeFile(join(short, 'config.json'), JSON.stringify({ ...config, max_position_embeddings: 16 }));
    const args = sftArgs(join(folder, 'short-run'), data).map((arg) => (arg === model ? short : arg));
    const result = await cli([...args, '--steps', '1']).done;
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain("no example fits the model's context of 16 tokens");
  });

  it('says which file a corrupt saved config.json is on --resume', async () => {
    const run = join(folder, 'corrupt');
    await mkdir(run);
    await writeFile(join(run, 'config.json'), '{"model": "m", "da');
    const result = await cli([...sftArgs(run, data), '--resume']).done;
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `[RUN_CONFIG_INVALID] ${join(run, 'config.json')}: the run's saved configuration is not valid JSON`,
    );
  });

  it('a bad --data leaves no run; the corrected start (BOM data) runs, refuses a second writer, stops on SIGINT with the command that resumes', async () => {
    const run = join(folder, 'run');
    const failed = await cli(sftArgs(run, join(folder, 'missing.jsonl'))).done;
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/missing\.jsonl/);
    expect(existsSync(join(run, 'config.json')), failed.stderr).toBe(false);

    const bom = join(folder, 'bom.jsonl');
    await writeFile(bom, `\uFEFF${readFileSync(data, 'utf8')}`);
    const live = startCli(sftArgs(run, bom), { cwd: folder, limitMs: 300_000 });
    const deadline = Date.now() + 240_000;
    while ((await metricSteps(run)).length < 1 && Date.now() < deadline && live.child.exitCode === null)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await metricSteps(run), 'the BOM data trained').not.toEqual([]);
    const config = readFileSync(join(run, 'config.json'), 'utf8');
    const before = await metricSteps(run);

    const second = await cli([...sftArgs(run, bom), '--resume']).done;
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/\[RUN_FOLDER_LOCKED\] .* in use by `agentmath train sft` \(pid/);
    expect(readFileSync(join(run, 'config.json'), 'utf8')).toBe(config);
    const after = await metricSteps(run);
    expect(after.slice(0, before.length)).toEqual(before);

    process.kill(live.child.pid!, 'SIGINT');
    const stopped = await live.done;
    expect(stopped.signal).toBe('SIGINT');
    expect(stopped.stderr).not.toMatch(/HF_SFT_FAILED/);
    const hint = /resume with:\n {2}(agentmath .*)\n/.exec(stopped.stderr)?.[1];
    expect(hint, stopped.stderr).toBeDefined();
    expect(hint).toContain(`--model ${model}`);
    const steps = await metricSteps(run);
    expect(steps.length).toBeLessThan(STEPS);

    // The printed command, split as a shell splits it, is this one with --out DIR --resume.
    const words = execFileSync('sh', ['-c', `printf '%s\\n' ${hint!}`], { encoding: 'utf8' })
      .trimEnd()
      .split('\n');
    const given = sftArgs(run, bom).filter((arg) => arg !== run && arg !== '--out');
    expect(words).toEqual(['agentmath', ...given, '--out', run, '--resume']);
  }, 400_000);
});
