/**
 * A PyTorch worker does not outlive the program that started it: SIGKILL of that program alone
 * (not its process group: an OOM kill, `kill -9 PID`) and the worker exits by itself within
 * about a second (parent_watch.py), so no engine replica of a killed `train rl` keeps a port,
 * memory or a GPU. Here the program is `engine serve`.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { killAllClis, startCli } from './cli-process.ts';
import { alive, descendantsOf } from './process-tree.ts';

afterAll(() => killAllClis());

describe('the embedded worker watches its parent', () => {
  it('exits when the program that started it is killed with SIGKILL', async () => {
    const server = startCli(['engine', 'serve', '--model', 'tiny', '--port', '0'], {
      cwd: process.cwd(),
      limitMs: 120_000,
    });
    let output = '';
    server.child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    while (!/http:\/\/\S+\n/.test(output) && server.child.exitCode === null) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const workers = descendantsOf(server.child.pid as number);
    expect(workers.length).toBeGreaterThan(0);
    process.kill(server.child.pid as number, 'SIGKILL');
    await server.done;
    // No deadline here: without the watch the worker lives on and the test's limit fails it.
    while (alive(workers).length > 0) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(alive(workers)).toEqual([]);
  }, 60_000);
});
