import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tagsDialect } from '../src/protocol/tags-dialect.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';
import {
  appendModelSegment,
  appendToolResult,
  createTrajectory,
  finishTrajectory,
} from '../src/trajectory/trajectory-builder.ts';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const bytes = (text: string) => [...Buffer.from(text)];
// The child decides on colour itself: no colour settings inherited from the test runner.
const { NO_COLOR: _noColor, FORCE_COLOR: _forceColor, ...baseEnv } = process.env;

function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(root, 'bin', 'agentmath.js'), ...args],
      { cwd: root, timeout: 30_000, env: { ...baseEnv, ...env } },
      (error, stdout, stderr) => {
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

function fixture(id: string, answer: string): Trajectory {
  let trajectory = createTrajectory({
    id,
    problemId: 'aime-1',
    dialect: 'tags',
    prompt: { text: '<|user|>\nFind 7 * 6.\n', tokenIds: bytes('<|user|>\nFind 7 * 6.\n') },
  });
  const first = '<think>Multiply.\n<code>\nprint(7 * 6)\nprint(1 / 0)\n</code>';
  trajectory = appendModelSegment(
    trajectory,
    {
      text: first,
      tokenIds: bytes(first),
      logprobs: bytes(first).map(() => -0.1),
      finishReason: 'stop',
      matchedStop: '</code>',
      policyVersion: 2,
    },
    120,
  );
  const closed = tagsDialect.closedCodeAtEnd(first, '</code>')!;
  const outcome = {
    status: 'error',
    stdout: '42\n',
    stderr: '',
    exception:
      'Traceback (most recent call last):\n  File "<cell>", line 2, in <module>\nZeroDivisionError: division by zero',
    ms: 4,
  } as const;
  const tool = tagsDialect.renderToolResult(outcome, closed);
  trajectory = appendToolResult(trajectory, {
    code: closed.code,
    outcome,
    ms: 11,
    text: tool,
    tokenIds: bytes(tool),
  });
  const last = `The product is 42.</think>\nThe answer is \\boxed{${answer}}.`;
  trajectory = appendModelSegment(
    trajectory,
    {
      text: last,
      tokenIds: bytes(last),
      logprobs: null,
      finishReason: 'stop',
      matchedStop: null,
      policyVersion: 2,
    },
    80,
  );
  return finishTrajectory(trajectory, { reason: 'answer' });
}

let directory: string;
let file: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'agentmath-inspect-'));
  file = join(directory, 'run.jsonl');
  const lines = [fixture('first', '42'), fixture('second', '24')].map((trajectory) =>
    JSON.stringify(trajectory),
  );
  await writeFile(file, `${lines.join('\n')}\n`);
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('agentmath inspect', () => {
  it('prints one trajectory readably, with plain markers when not a terminal', async () => {
    const { code, stdout, stderr } = await run(['inspect', file, '--index', '1']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).not.toContain('\u001b[');
    expect(stdout).toContain(
      '══ trajectory second · problem aime-1 · sample 0 · dialect tags · prompt 21 tokens',
    );
    expect(stdout).toContain(' think │ Multiply.');
    expect(stdout).toContain('  code │ print(7 * 6)');
    expect(stdout).toContain('output │ 42');
    expect(stdout).toContain('output │ ZeroDivisionError: division by zero');
    expect(stdout).toContain('answer │ The answer is \\boxed{24}.');
    expect(stdout).toContain(
      '#1 model · 57 tokens · mask 1 · finish stop "</code>" · policy v2 · mean logprob -0.100',
    );
    expect(stdout).toMatch(/#2 tool · \d+ tokens · mask 0 · tool call 0 · error · 11 ms \(run 4 ms\)/);
    expect(stdout).toContain('══ finish: answer · answer: 24');
    expect(stdout).toContain('1 tool call (1 error) · 3 segments');
    expect(stdout).not.toContain('trajectory first');
  });

  it('prints every trajectory without --index, and colours on request unless NO_COLOR is set', async () => {
    const all = await run(['inspect', file]);
    expect(all.code).toBe(0);
    expect(all.stdout).toContain('trajectory first');
    expect(all.stdout).toContain('trajectory second');
    const coloured = await run(['inspect', file, '--index', '0'], { FORCE_COLOR: '1' });
    expect(coloured.stdout).toContain('\u001b[36mprint(7 * 6)\u001b[39m');
    const plain = await run(['inspect', file, '--index', '0'], { FORCE_COLOR: '1', NO_COLOR: '1' });
    expect(plain.stdout).not.toContain('\u001b[');
  });

  it('says which line and field are wrong, and when --index is out of range', async () => {
    const bad = join(directory, 'bad.jsonl');
    await writeFile(bad, `${JSON.stringify({ ...fixture('x', '1'), sample: -2 })}\n`);
    const invalid = await run(['inspect', bad]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain(`agentmath: [TRAJECTORY_INVALID] ${bad} line 1: sample:`);
    const range = await run(['inspect', file, '--index', '5']);
    expect(range.code).toBe(1);
    expect(range.stderr).toContain('holds 2 trajectories; --index 5 is out of range (0..1)');
  });

  it('reads a file whose last line was cut off by a crash, with a warning', async () => {
    const cut = join(directory, 'cut.jsonl');
    await writeFile(
      cut,
      `${JSON.stringify(fixture('whole', '42'))}\n${JSON.stringify(fixture('partial', '1')).slice(0, 80)}`,
    );
    const { code, stdout, stderr } = await run(['inspect', cut]);
    expect(code).toBe(0);
    expect(stdout).toContain('trajectory whole');
    expect(stderr).toContain(`agentmath: warning: ${cut} line 2: skipped a truncated last line`);
  });

  it('names the path of a folder or a missing file, and reads - (standard input) with a BOM', async () => {
    const folderResult = await run(['inspect', directory]);
    expect(folderResult.code).toBe(1);
    expect(folderResult.stderr).toContain(`trajectory file ${directory} is a folder, not a file`);
    const missing = await run(['inspect', join(directory, 'nope.jsonl')]);
    expect(missing.stderr).toContain(`trajectory file ${join(directory, 'nope.jsonl')} does not exist`);
    const bom = join(directory, 'bom.jsonl');
    await writeFile(bom, `\uFEFF${JSON.stringify(fixture('bom', '7'))}\n`);
    const fromFile = await run(['inspect', bom]);
    expect(fromFile.code).toBe(0);
    expect(fromFile.stdout).toContain('trajectory bom');
    const piped = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = execFile(process.execPath, [join(root, 'bin', 'agentmath.js'), 'inspect', '-'], {
        env: { ...baseEnv, NO_COLOR: '1' },
      });
      let stdout = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      child.stdin!.end(`\uFEFF${JSON.stringify(fixture('piped', '7'))}\n`);
      child.on('close', (code) => resolve({ code, stdout }));
    });
    expect(piped.code).toBe(0);
    expect(piped.stdout).toContain('trajectory piped');
  });

  it('report on a missing folder says so', async () => {
    const result = await run(['report', join(directory, 'no-such-run')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`run folder ${join(directory, 'no-such-run')} does not exist`);
  });
});
