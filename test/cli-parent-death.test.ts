/**
 * A launcher killed with SIGKILL takes the real process with it. On a system Node older than
 * 22.18 the launcher re-runs itself under the bundled Node 24; SIGKILL cannot be passed on, so
 * the child watches a pipe whose other end only the launcher holds. Here `sandbox serve` (a
 * long-running command with a Python launcher and a warm jail below it) is started through the
 * system Node and its launcher killed: the real process, its launcher and jails all end, and
 * the port closes. Skipped where the system Node runs TypeScript itself (no re-run happens).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { portClosed } from './port-closed.ts';
import { alive, descendantsOf } from './process-tree.ts';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const CLI = join(ROOT, 'bin', 'agentmath.js');
const SYSTEM_NODE = '/usr/bin/node';
const started: ChildProcess[] = [];

/** Whether `node` lacks type stripping, so the launcher re-runs itself under the bundled Node. */
function reRuns(node: string): boolean {
  if (!existsSync(node) || !existsSync(join(ROOT, 'node_modules', 'node', 'bin', 'node'))) return false;
  return (
    execFileSync(node, ['-p', 'Boolean(process.features.typescript)'], { encoding: 'utf8' }).trim() ===
    'false'
  );
}

afterAll(() => {
  for (const child of started) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

describe.runIf(reRuns(SYSTEM_NODE))('the launcher killed with SIGKILL', () => {
  it('takes the re-run process, its sandbox launcher and jails with it', async () => {
    const child = spawn(
      SYSTEM_NODE,
      [CLI, 'sandbox', 'serve', '--port', '0', '--warm', '1', '--preload', ''],
      {
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    started.push(child);
    let stdout = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const match = /http:\/\/[\d.]+:\d+/.exec(stdout);
        if (match) resolve(match[0]);
      });
      child.on('exit', () => reject(new Error('the server ended before serving')));
    });
    let tree = descendantsOf(child.pid!);
    for (let tries = 0; tries < 100 && tree.length < 3; tries++) {
      await sleep(100);
      tree = descendantsOf(child.pid!);
    }
    // The re-run Node, the sandbox's Python launcher, and at least one jail.
    expect(tree.length).toBeGreaterThanOrEqual(3);
    process.kill(child.pid!, 'SIGKILL'); // the launcher alone, not its group
    const deadline = Date.now() + 20_000;
    while (alive(tree).length > 0 && Date.now() < deadline) await sleep(100);
    expect(alive(tree)).toEqual([]);
    expect(await portClosed(url)).toBe(true);
  }, 60_000);
});
