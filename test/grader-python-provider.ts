/**
 * Test double of SandboxProvider for grader tests when the jailed pool is not available:
 * one persistent /usr/bin/python3 process per session, speaking JSON lines. It runs only the
 * grader's own checker program and test data, never model text.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { ExecutionOutcome, SandboxProvider, SandboxSession } from '../src/sandbox/types.ts';

const DRIVER = String.raw`
import sys, json, io, contextlib, traceback
namespace = {'__name__': '__session__'}
for line in sys.stdin:
    request = json.loads(line)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(request['code'], namespace)
        reply = {'status': 'ok', 'stdout': out.getvalue(), 'stderr': '', 'ms': 0}
    except Exception as error:
        reply = {'status': 'error', 'stdout': out.getvalue(), 'stderr': traceback.format_exc(), 'exception': type(error).__name__, 'ms': 0}
    sys.__stdout__.write(json.dumps(reply) + '\n')
    sys.__stdout__.flush()
`;

class PythonSession implements SandboxSession {
  readonly id: string;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly replies: ((line: string) => void)[] = [];
  private dead = false;

  constructor(id: string) {
    this.id = id;
    this.child = spawn('/usr/bin/python3', ['-u', '-c', DRIVER], { stdio: 'pipe' });
    createInterface({ input: this.child.stdout }).on('line', (line) => this.replies.shift()?.(line));
    this.child.on('exit', () => {
      this.dead = true;
    });
  }

  execute(code: string, options: { timeoutMs?: number } = {}): Promise<ExecutionOutcome> {
    if (this.dead) return Promise.resolve({ status: 'killed', reason: 'session closed' });
    const limitMs = options.timeoutMs ?? 10_000;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.dead = true;
        this.child.kill('SIGKILL');
        resolve({ status: 'timeout', stdout: '', limitMs });
      }, limitMs);
      this.replies.push((line) => {
        clearTimeout(timer);
        resolve(JSON.parse(line) as ExecutionOutcome);
      });
      this.child.stdin.write(`${JSON.stringify({ code })}\n`);
    });
  }

  async close(): Promise<void> {
    this.dead = true;
    this.child.kill('SIGKILL');
  }
}

/** A provider whose sessions are plain local Python processes (tests only). */
export function createPythonTestProvider(): SandboxProvider & { sessionsOpened: () => number } {
  const sessions: PythonSession[] = [];
  return {
    async openSession() {
      const session = new PythonSession(`test-${sessions.length}`);
      sessions.push(session);
      return session;
    },
    async close() {
      await Promise.all(sessions.map((session) => session.close()));
    },
    sessionsOpened: () => sessions.length,
  };
}
