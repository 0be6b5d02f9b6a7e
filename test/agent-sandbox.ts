import { spawnSync } from 'node:child_process';
import type { ExecutionOutcome, SandboxProvider } from '../src/sandbox/types.ts';
export async function openTestSandbox(): Promise<SandboxProvider & { close(): Promise<void> }> {
  return {
    async openSession() {
      let history: string[] = [];
      return {
        id: 'tmp',
        async execute(code: string): Promise<ExecutionOutcome> {
          const prefix = history
            .map(
              (h) =>
                `import contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()):\n    exec(${JSON.stringify(h)})\n`,
            )
            .join('');
          const result = spawnSync('/usr/bin/python3', ['-c', `${prefix}exec(${JSON.stringify(code)})`], {
            encoding: 'utf8',
          });
          if (result.signal === 'SIGKILL') {
            history = [];
            return { status: 'killed', reason: 'SIGKILL' };
          }
          if (result.status !== 0)
            return { status: 'error', stdout: result.stdout, stderr: '', exception: result.stderr, ms: 1 };
          history.push(code);
          return { status: 'ok', stdout: result.stdout, stderr: result.stderr, ms: 1 };
        },
        async close() {},
      };
    },
    async close() {},
  };
}
