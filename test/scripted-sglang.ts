/**
 * Starts test/scripted_sglang.py (a scripted SGLang 0.5.23 in its own Python process, written
 * from SGLang's source; nothing of AgentMath inside) on a model folder and says where it serves.
 * `report()` reads what it saw: the weight names it dropped as unknown (SGLang drops them
 * silently) and its weight-update events in order.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { trainerPython } from '../src/shared/python-environments.ts';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'scripted_sglang.py');

export type ScriptedSglang = {
  url: string;
  report(): Promise<{ unknown_weight_names: string[]; events: string[] }>;
  /** Everything it wrote on stderr so far. */
  stderr(): string;
  close(): Promise<void>;
};

export async function startScriptedSglang({
  model,
  tokenDelayMs = 0,
  script = 'sums',
}: {
  model: string;
  tokenDelayMs?: number;
  script?: 'sums' | 'none';
}): Promise<ScriptedSglang> {
  const child: ChildProcess = spawn(
    trainerPython(),
    [SCRIPT, '--model', model, '--port', '0', '--script', script, '--token-delay-ms', String(tokenDelayMs)],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, OMP_NUM_THREADS: '1' } },
  );
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = /\{"event": "listening", "port": (\d+)\}/.exec(stdout);
      if (line !== null) resolve(Number(line[1]));
    });
    child.on('exit', (code) =>
      reject(new Error(`scripted SGLang exited ${code} before serving:\n${stderr}`)),
    );
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    report: async () =>
      (await (await fetch(`${url}/scripted/report`)).json()) as {
        unknown_weight_names: string[];
        events: string[];
      },
    stderr: () => stderr,
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}
