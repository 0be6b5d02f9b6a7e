/**
 * A closed standard output, as `agentmath … | head` makes one: `inspect`, `grade` and `solve`
 * (the latter serving an embedded model, so a PyTorch worker and jails run) end quietly with
 * status 0 — no `write EPIPE` stack trace — and leave no child process behind.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initHfModel } from '../src/model/index.ts';
import {
  appendModelSegment,
  createTrajectory,
  finishTrajectory,
} from '../src/trajectory/trajectory-builder.ts';
import { alive, descendantsOf } from './process-tree.ts';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const CLI = join(ROOT, 'bin', 'agentmath.js');
const bytes = (text: string) => [...Buffer.from(text)];
let folder: string;
const started: ChildProcess[] = [];

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'agentmath-pipes-'));
  // Enough output to fill a pipe many times over.
  const lines: string[] = [];
  for (let index = 0; index < 400; index++) {
    let trajectory = createTrajectory({
      id: `t${index}`,
      problemId: `p${index}`,
      dialect: 'tags',
      prompt: { text: 'Find 7 * 6.\n', tokenIds: bytes('Find 7 * 6.\n') },
    });
    const text = `${'Multiply seven by six. '.repeat(20)}</think>\\boxed{42}`;
    trajectory = appendModelSegment(
      trajectory,
      {
        text,
        tokenIds: bytes(text),
        logprobs: null,
        finishReason: 'stop',
        matchedStop: null,
        policyVersion: 0,
      },
      20,
    );
    lines.push(JSON.stringify(finishTrajectory(trajectory, { reason: 'answer' })));
  }
  writeFileSync(join(folder, 'trajectories.jsonl'), `${lines.join('\n')}\n`);
  const pairs = Array.from({ length: 20_000 }, (_, index) =>
    JSON.stringify({ prediction: `\\boxed{${index}}`, reference: String(index) }),
  );
  writeFileSync(join(folder, 'pairs.jsonl'), `${pairs.join('\n')}\n`);
  // An untrained byte model of the `test` shape as the project's embedded model (the model of
  // its tool SFT run): it talks until its budget ends.
  await initHfModel({
    arch: 'byte-gpt',
    shape: 'test',
    out: join(folder, '.agentmath', 'models', 'arith-tool', 'model'),
  });
}, 120_000);

afterAll(() => {
  for (const child of started) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(folder, { recursive: true, force: true });
});

/**
 * Runs the CLI, reads `lines` lines of its stdout and then closes the pipe as `head` does.
 * Returns its exit, stderr, and which of its descendants (seen while it ran) are still alive.
 */
async function runIntoHead(
  args: string[],
  lines: number,
  where: { cwd?: string; env?: Record<string, string> } = {},
) {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: where.cwd ?? folder,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', ...where.env },
  });
  started.push(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const seen = new Set<number>();
  const commands = new Set<string>();
  let running = true;
  void exited.then(() => {
    running = false;
  });
  const watch = (async () => {
    while (running) {
      for (const pid of descendantsOf(child.pid!)) {
        if (!seen.has(pid)) {
          try {
            commands.add(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '));
          } catch {
            // ended meanwhile
          }
        }
        seen.add(pid);
      }
      await sleep(50);
    }
  })();
  let received = '';
  await new Promise<void>((resolve) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      received += chunk.toString();
      if (received.split('\n').length > lines) {
        child.stdout!.destroy();
        resolve();
      }
    });
    void exited.then(() => resolve());
  });
  const end = await exited;
  await watch;
  let left = alive([...seen]);
  for (let tries = 0; tries < 100 && left.length > 0; tries++) {
    await sleep(100);
    left = alive([...seen]);
  }
  return { end, stderr, received, seen: [...seen], commands: [...commands], left };
}

describe('a closed stdout', () => {
  it('inspect FILE | head -2', async () => {
    const result = await runIntoHead(['inspect', 'trajectories.jsonl'], 2);
    expect(result.stderr).toBe('');
    expect(result.end).toEqual({ code: 0, signal: null });
  });

  it('grade --input FILE | head', async () => {
    const result = await runIntoHead(['grade', '--input', 'pairs.jsonl', '--no-sandbox'], 10);
    expect(result.stderr).toBe('');
    expect(result.end).toEqual({ code: 0, signal: null });
  });

  it('solve … | head -1 with the embedded model stops its PyTorch worker and jails', async () => {
    // Started elsewhere: the embedded model is found through AGENTMATH_HOME.
    const result = await runIntoHead(['solve', 'Compute 6*7.', '--max-new-tokens', '8', '--seed', '1'], 1, {
      cwd: tmpdir(),
      env: { AGENTMATH_HOME: folder },
    });
    expect(result.stderr).not.toMatch(/EPIPE|Error|at /);
    expect(result.end).toEqual({ code: 0, signal: null });
    // The worker (python3 -m agentmath_engine) was among the descendants, and none is left.
    expect(result.commands.some((command) => command.includes('agentmath_engine'))).toBe(true);
    expect(result.left).toEqual([]);
  });
});
