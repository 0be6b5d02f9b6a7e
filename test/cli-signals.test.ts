/**
 * Stopping a server or job by its PID, as a supervisor does: SIGTERM (or HUP, INT) sent to the
 * `agentmath` launcher only — not to its process group — reaches the real process, which stops
 * its Python launcher, jails and PyTorch worker; the port closes and the launcher dies by the
 * same signal. Run both through the system Node (older than 22.18 here: the launcher re-runs
 * itself under the bundled Node 24) and through Node 24 directly.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { portClosed } from './port-closed.ts';
import { alive, descendantsOf } from './process-tree.ts';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const CLI = join(ROOT, 'bin', 'agentmath.js');
const BUNDLED = join(ROOT, 'node_modules', 'node', 'bin', 'node');
const started: ChildProcess[] = [];

const runtimes = [
  { name: 'system Node (re-run by the launcher)', node: '/usr/bin/node' },
  { name: 'Node 24 directly', node: BUNDLED },
].filter((runtime) => existsSync(runtime.node));

afterAll(() => {
  for (const child of started) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

/** Starts a server and resolves with its URL (the first http:// in its stdout). */
async function startServer(node: string, args: string[]) {
  const child = spawn(node, [CLI, ...args], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /http:\/\/[\d.]+:\d+/.exec(stdout);
      if (match) resolve(match[0]);
    });
    void exited.then(() => reject(new Error(`the server ended before serving: ${stderr}`)));
  });
  return { child, url, exited };
}

/** Waits until none of `pids` is alive, or gives up after `limitMs`; returns the survivors. */
async function survivors(pids: number[], limitMs = 15_000): Promise<number[]> {
  const deadline = Date.now() + limitMs;
  let left = alive(pids);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(100);
    left = alive(pids);
  }
  return left;
}

describe.each(runtimes)('signals via $name', ({ node }) => {
  it.each(['SIGTERM', 'SIGHUP', 'SIGINT'] as const)(
    'sandbox serve: %s to the launcher stops the server, its launcher and jails',
    async (signal) => {
      const server = await startServer(node, [
        'sandbox',
        'serve',
        '--port',
        '0',
        '--warm',
        '1',
        '--preload',
        '',
      ]);
      // Wait for the warm jail, so that there is one to clean up.
      let tree = descendantsOf(server.child.pid!);
      for (let tries = 0; tries < 100 && !tree.some((pid) => isJail(pid)); tries++) {
        await sleep(100);
        tree = descendantsOf(server.child.pid!);
      }
      expect(tree.some((pid) => isJail(pid))).toBe(true);
      process.kill(server.child.pid!, signal);
      const end = await server.exited;
      expect(end).toEqual({ code: null, signal });
      expect(await survivors(tree)).toEqual([]);
      expect(await portClosed(server.url)).toBe(true);
    },
  );

  it('engine serve: SIGTERM to the launcher stops the PyTorch worker', async () => {
    const server = await startServer(node, ['engine', 'serve', '--model', 'test', '--port', '0']);
    const tree = descendantsOf(server.child.pid!);
    expect(tree.length).toBeGreaterThan(0);
    process.kill(server.child.pid!, 'SIGTERM');
    expect(await server.exited).toEqual({ code: null, signal: 'SIGTERM' });
    expect(await survivors(tree)).toEqual([]);
    expect(await portClosed(server.url)).toBe(true);
  });
});

/** A bubblewrap jail process. */
function isJail(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'bwrap';
  } catch {
    return false;
  }
}
