/** Test helper: runs `agentmath sandbox serve` as a real child process on a free loopback port. */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));

export type NodeProcess = { url: string; child: ChildProcess; stop(): Promise<void> };

/** Starts one node and resolves with its URL once it serves. */
export function startNodeProcess(args: string[], env: Record<string, string> = {}): Promise<NodeProcess> {
  const child = spawn(process.execPath, [MAIN, 'sandbox', 'serve', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /serving on (http:\/\/\S+)/.exec(output);
      if (match) resolve({ url: match[1]!, child, stop });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', (code) =>
      reject(new Error(`sandbox node exited (${code}) before serving: ${output}`)),
    );
  });
}
