/**
 * The real `agentmath` CLI as a child process for end-to-end tests: started in its own process
 * group (so a kill also takes its workers), output collected, killed after a time limit, and
 * every one still running killed by `killAllClis` in a test file's `afterAll`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = join(dirname(dirname(fileURLToPath(import.meta.url))), 'bin', 'agentmath.js');
const running = new Set<ChildProcess>();

/** `signal`: the signal the CLI died of (a stopped run re-raises the one that stopped it). */
export type CliResult = {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
};

/** SIGKILLs the child's process group, if it still runs. */
export function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * Starts `agentmath ARGS` in `cwd`; `done` resolves when it exits (or is killed at `limitMs`).
 * Its process group is killed when it exits, unless `keepGroupOnExit` (a test that checks that
 * its children end by themselves, and then kills what is left itself).
 */
export function startCli(
  args: string[],
  {
    cwd,
    limitMs = 150_000,
    env = {},
    keepGroupOnExit = false,
  }: { cwd: string; limitMs?: number; env?: NodeJS.ProcessEnv; keepGroupOnExit?: boolean },
): { child: ChildProcess; done: Promise<CliResult> } {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', ...env },
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const timer = setTimeout(() => killGroup(child), limitMs);
  const done = new Promise<CliResult>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (!keepGroupOnExit) killGroup(child);
      running.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, done };
}

/** Kills every CLI these helpers started that still runs. */
export function killAllClis(): void {
  for (const child of running) killGroup(child);
}
