/**
 * A Python module from the project's locked `.venv` that a benchmark drives one JSON line at a
 * time (the baselines beside our engine and trainer: `agentmath_engine.generate_baseline`,
 * `agentmath_train.plain_loop`). The child prints `{"event": "ready", …}` once loaded, then one
 * JSON answer per command; an answer with `error` rejects. `stop()` ends it (killed if it lingers).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { PROJECT_ROOT, trainerPython } from '../shared/python-environments.ts';

export class BaselineProcessError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('BASELINE_PROCESS_FAILED', message, options);
  }
}

export type PythonLineProcess = {
  readonly ready: Record<string, unknown>;
  request<T>(command: Record<string, unknown>): Promise<T>;
  stop(): Promise<void>;
};

export async function startPythonLineProcess(options: {
  module: string;
  args: string[];
  python?: string;
  onLog?: (line: string) => void;
}): Promise<PythonLineProcess> {
  const { module, args, onLog = () => {} } = options;
  const child: ChildProcess = spawn(options.python ?? trainerPython(), ['-m', module, ...args], {
    env: {
      ...process.env,
      PYTHONPATH: join(PROJECT_ROOT, 'python'),
      PYTHONUNBUFFERED: '1',
      HF_HUB_OFFLINE: '1',
      TRANSFORMERS_VERBOSITY: 'error',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  if (child.stderr) {
    createInterface({ input: child.stderr }).on('line', (line) => {
      tail.push(line);
      if (tail.length > 20) tail.shift();
      onLog(line);
    });
  }
  const waiting: Array<{ resolve: (line: string) => void; reject: (error: Error) => void }> = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const gone = () => new BaselineProcessError(`${module} exited; last lines:\n${tail.slice(-10).join('\n')}`);
  void exited.then(() => {
    for (const pending of waiting.splice(0)) pending.reject(gone());
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.startsWith('{')) waiting.shift()?.resolve(line);
    else onLog(line);
  });
  const next = () =>
    new Promise<string>((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null) reject(gone());
      else waiting.push({ resolve, reject });
    });
  const ready = JSON.parse(await next()) as Record<string, unknown>;
  return {
    ready,
    async request<T>(command: Record<string, unknown>): Promise<T> {
      const answer = next();
      child.stdin!.write(`${JSON.stringify(command)}\n`);
      const parsed = JSON.parse(await answer) as T & { error?: string };
      if (typeof parsed.error === 'string') throw new BaselineProcessError(`${module}: ${parsed.error}`);
      return parsed;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin!.end(`${JSON.stringify({ command: 'stop' })}\n`);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
