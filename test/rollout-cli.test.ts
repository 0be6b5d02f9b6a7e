/**
 * `agentmath rollout` end to end on 2 embedded replicas with partial rollout. A byte model of
 * the `test` shape is taught one response (a code cell that sets `x`, a second
 * that prints `x + 1`, an answer) and saved as the project's embedded model. With one tool call
 * per segment, step 0 parks every trajectory after the first cell and step 1 resumes it: the
 * second cell prints 42 only if the session state survived. A run killed with SIGKILL between
 * the steps and resumed (fresh sessions replay the earlier cells) loses and duplicates nothing.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createByteLevelTokenizer } from '../src/engine/index.ts';
import { tagsDialect } from '../src/protocol/tags-dialect.ts';
import { createLocalSandbox } from '../src/sandbox/index.ts';
import { buildSftExample } from '../src/train/index.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';
import { killAllClis, killGroup, startCli } from './cli-process.ts';
import { memoriseByteModel } from './memorised-byte-model.ts';
import { alive, descendantsOf } from './process-tree.ts';
import { expectRecordFiles } from './record-checks.ts';

/** The command line of a process ('' once it is gone). */
function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

const EOS = 256;
const tokenizer = createByteLevelTokenizer();
const PROBLEM = { id: 'X', problem: 'Compute 41+1.', answer: '42' };
const MODEL = [
  '<think><code>\nx = 41\nprint(x)\n</code>',
  '<code>\nprint(x + 1)\n</code>',
  '</think>\n\\boxed{42}.',
];
const CODES = ['x = 41\nprint(x)', 'print(x + 1)'];

let folder: string;
let bench: string;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'agentmath-rollout-cli-'));
  bench = join(folder, 'one.jsonl');
  writeFileSync(bench, `${JSON.stringify(PROBLEM)}\n`);
  // The exact sequence the agent will see, tool outputs from the real sandbox.
  const sandbox = createLocalSandbox({ maxWorkers: 1, warmWorkers: 1 });
  const session = await sandbox.openSession();
  const tools: string[] = [];
  for (const code of CODES) {
    tools.push(
      tagsDialect.renderToolResult(await session.execute(code), { outputOpening: '\n<interpreter>\n' }),
    );
  }
  await session.close();
  await sandbox.close();
  const segments = MODEL.flatMap((text, index) => [
    { kind: 'model' as const, text },
    ...(tools[index] === undefined ? [] : [{ kind: 'tool' as const, text: tools[index] }]),
  ]);
  const example = buildSftExample(
    { problem: { ...PROBLEM, family: 'known', level: 1 }, style: 'tool', segments },
    tokenizer,
    tagsDialect,
  );
  const promptLength = example.lossMask.indexOf(1);
  await memoriseByteModel({
    sequences: [{ inputIds: example.inputIds, lossMask: example.lossMask }],
    out: join(folder, '.agentmath', 'models', 'arith-tool', 'model'),
    learned: async (engine) => {
      const prefix = example.inputIds.slice(0, promptLength);
      for (const [index, text] of MODEL.entries()) {
        const expected = tokenizer.encode(text, { specialTokens: false });
        if (index === MODEL.length - 1) expected.push(EOS);
        const result = await engine.generate({
          promptTokenIds: prefix,
          maxNewTokens: expected.length + 4,
          temperature: 0,
          topP: 1,
          stop: [...tagsDialect.stopStrings],
        });
        if (JSON.stringify(result.tokenIds) !== JSON.stringify(expected))
          return `segment ${index}: got ${JSON.stringify(result.text)}`;
        prefix.push(...expected, ...tokenizer.encode(tools[index] ?? '', { specialTokens: false }));
      }
      return null;
    },
  });
}, 300_000);

afterAll(() => {
  killAllClis();
  rmSync(folder, { recursive: true, force: true });
});

const args = (out: string, extra: string[] = []) => [
  'rollout',
  '--bench',
  bench,
  '--replicas',
  '2',
  '--group-size',
  '2',
  '--batch-size',
  '1',
  '--over-provision',
  '0',
  '--steps',
  '2',
  '--segment-tool-calls',
  '1',
  '--temperature',
  '0',
  '--sandbox-workers',
  '2',
  '--out',
  out,
  ...extra,
];

const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

function checkRun(out: string): void {
  // No group is decided in these two steps: groups.jsonl is checked by the train rl tests.
  expectRecordFiles(out, ['rollout/config.json', 'rollout/trajectories.jsonl', 'rollout/steps.jsonl']);
  const trajectories = lines(join(out, 'trajectories.jsonl')) as unknown as Trajectory[];
  const keys = trajectories.map((trajectory) => `${trajectory.id}@${String(trajectory.meta?.rolloutStep)}`);
  expect(new Set(keys).size).toBe(keys.length); // nothing duplicated
  const ids = [...new Set(trajectories.map((trajectory) => trajectory.id))];
  expect(ids).toHaveLength(2);
  for (const id of ids) {
    const records = trajectories.filter((trajectory) => trajectory.id === id);
    expect(records.map((record) => record.meta?.rolloutStep)).toEqual([0, 1]); // nothing lost
    const [first, second] = records as [Trajectory, Trajectory];
    expect(first.finish?.reason).toBe('segment-budget');
    expect(second.segments.slice(0, first.segments.length)).toEqual(first.segments);
    // The second cell read x, set in step 0: the session state is intact.
    expect(second.toolCalls.map((call) => call.outcome)).toMatchObject([
      { status: 'ok', stdout: '41\n' },
      { status: 'ok', stdout: '42\n' },
    ]);
    const models = second.segments.filter((segment) => segment.kind === 'model');
    expect(models.map((segment) => segment.step)).toEqual([0, 1]);
    expect(
      models.every((segment) => segment.replica === 'embedded-0' || segment.replica === 'embedded-1'),
    ).toBe(true);
  }
  const steps = lines(join(out, 'steps.jsonl'));
  expect(steps.map((step) => step.step)).toEqual([0, 1]);
  expect(steps[1]).toMatchObject({
    mode: 'async',
    router: 'prefix-aware',
    trajectoriesResumed: 2,
    trajectoriesParked: 2,
  });
  expect(Object.keys(steps[1]?.replicas as object).sort()).toEqual(['embedded-0', 'embedded-1']);
}

describe('agentmath rollout on embedded replicas', () => {
  it('parks in step 0 and resumes in step 1 with earlier segments and session state intact', async () => {
    const out = join(folder, 'run');
    const result = await startCli(args(out), { cwd: folder, limitMs: 150_000 }).done;
    expect(result.stderr).not.toMatch(/agentmath: \[/);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/step\s+wall s/);
    checkRun(out);
  }, 200_000);

  it('refuses --tail-cut without --kv-budget-tokens or outside (0, 1), before starting anything', async () => {
    const alone = await startCli(['rollout', '--bench', bench, '--tail-cut', '0.5'], { cwd: folder }).done;
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/--tail-cut needs --kv-budget-tokens/);
    const outside = await startCli(
      ['rollout', '--bench', bench, '--kv-budget-tokens', '1000', '--tail-cut', '1.5'],
      { cwd: folder },
    ).done;
    expect(outside.code).toBe(2);
    expect(outside.stderr).toMatch(/--tail-cut must be a fraction between 0 and 1 \(got 1.5\)/);
    const sync = await startCli(
      ['rollout', '--bench', bench, '--mode', 'sync', '--kv-budget-tokens', '1000'],
      {
        cwd: folder,
      },
    ).done;
    expect(sync.code).toBe(2);
    expect(sync.stderr).toMatch(/apply to --mode async/);
  });

  it('SIGTERM to the launcher stops the embedded replicas, the sandbox and its jails, then re-raises', async () => {
    const out = join(folder, 'terminated');
    const { child, done } = startCli([...args(out), '--steps', '50'], { cwd: folder, limitMs: 150_000 });
    let tree: number[] = [];
    // Both PyTorch workers and the sandbox launcher are up once step 0 has written a line.
    for (let tries = 0; tries < 1200 && !existsSync(join(out, 'trajectories.jsonl')); tries++)
      await new Promise((resolve) => setTimeout(resolve, 50));
    tree = descendantsOf(child.pid!);
    expect(tree.filter((pid) => commandLine(pid).includes('agentmath_engine')).length).toBe(2);
    process.kill(child.pid!, 'SIGTERM');
    const end = await done;
    expect(end.signal).toBe('SIGTERM');
    const deadline = Date.now() + 20_000;
    while (alive(tree).length > 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(alive(tree)).toEqual([]);
  }, 200_000);

  it('after kill -9 between the steps, --resume loses and duplicates nothing; a changed config is refused', async () => {
    const out = join(folder, 'killed');
    const { child, done } = startCli(args(out), { cwd: folder, limitMs: 150_000 });
    const checkpoint = join(out, 'checkpoint.json');
    while (!existsSync(checkpoint) && child.exitCode === null)
      await new Promise((resolve) => setTimeout(resolve, 10));
    killGroup(child);
    await done;
    expect(JSON.parse(readFileSync(checkpoint, 'utf8')).nextStep).toBeGreaterThanOrEqual(1);
    const refused = await startCli([...args(out, ['--resume']), '--group-size', '3'], { cwd: folder }).done;
    expect(refused.code).not.toBe(0);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/RUN_IDENTITY_MISMATCH/);
    const resumed = await startCli(args(out, ['--resume']), { cwd: folder, limitMs: 150_000 }).done;
    expect(resumed.stderr).not.toMatch(/agentmath: \[/);
    expect(resumed.code).toBe(0);
    checkRun(out);
  }, 300_000);
});
