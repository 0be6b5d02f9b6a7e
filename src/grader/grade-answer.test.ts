import { describe, expect, it } from 'vitest';
import type { ExecutionOutcome, SandboxProvider } from '../sandbox/types.ts';
import { gradeAnswer } from './grade-answer.ts';
import { releaseSymbolicSessions } from './symbolic-checker.ts';

/**
 * A sandbox whose first session takes `openDelayMs` to open (a busy pool), and whose checker
 * answers every symbolic query "equal" at once.
 */
function slowToOpenSandbox(openDelayMs: number): { provider: SandboxProvider; checks: () => number } {
  let opened = 0;
  let checks = 0;
  const provider: SandboxProvider = {
    async openSession() {
      if (opened++ === 0) await new Promise((resolve) => setTimeout(resolve, openDelayMs));
      return {
        id: `session-${opened}`,
        async execute(code: string): Promise<ExecutionOutcome> {
          if (code.startsWith('print(_agentmath_check(')) checks++;
          return { status: 'ok', stdout: '{"outcome": "equal"}\n', stderr: '', ms: 0 };
        },
        async close() {},
      };
    },
    async close() {},
  };
  return { provider, checks: () => checks };
}

describe('gradeAnswer symbolic budget', () => {
  it('does not charge the wait for a sandbox session against the symbolic time budget', async () => {
    // Two symbolic checks, one after the other (one per element); the first waits 300 ms for its session, longer
    // than the whole 100 ms budget, while the checks themselves take no time. The wait is the
    // sandbox's load, not the answer's cost: the second check must still run.
    const { provider, checks } = slowToOpenSandbox(300);
    const grade = await gradeAnswer(
      '\\boxed{\\sqrt{2}/2, \\sqrt{3}/3}',
      '\\frac{1}{\\sqrt{2}}, \\frac{1}{\\sqrt{3}}',
      {
        sandbox: provider,
        timeoutMs: 100,
      },
    );
    expect(checks()).toBe(2);
    expect(grade).toMatchObject({ correct: true, reason: 'structural' });
    await releaseSymbolicSessions(provider);
  });
});
