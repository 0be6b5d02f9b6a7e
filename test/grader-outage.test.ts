import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { gradeAnswer, releaseSymbolicSessions } from '../src/grader/index.ts';
import { SandboxClient, SandboxClusterClient } from '../src/sandbox/index.ts';
import { type NodeProcess, startNodeProcess } from './sandbox-node-process.ts';

const run = promisify(execFile);
const cli = new URL('../bin/agentmath.js', import.meta.url).pathname;
const nodeArgs = ['--workers', '2', '--warm', '1', '--preload', '', '--memory-mb', '1024'];
/** Pairs only the symbolic step can prove equal (right answers). */
const SYMBOLIC_PAIRS: [string, string][] = [
  ['(x+1)^2', 'x^2+2x+1'],
  ['\\sqrt{8}', '2\\sqrt{2}'],
  ['\\frac{x^2-1}{x-1}', 'x+1'],
];

const started: NodeProcess[] = [];
afterAll(async () => {
  await Promise.all(started.map((node) => node.stop()));
});

describe('a grade whose symbolic step cannot run has no verdict', () => {
  it('sandbox unreachable: correct null, reason grader-unavailable with the cause; the fast path still decides', async () => {
    const sandbox = new SandboxClient({ url: 'http://127.0.0.1:1' });
    try {
      for (const [prediction, reference] of SYMBOLIC_PAIRS) {
        const grade = await gradeAnswer(prediction, reference, { sandbox, timeoutMs: 5_000 });
        expect(grade).toMatchObject({ correct: null, reason: 'grader-unavailable', extracted: prediction });
        expect(grade.correct === null && grade.cause).toMatch(
          /sandbox unavailable.*retry: sandbox unavailable/,
        );
      }
      // Settled without SymPy: verdicts as usual.
      expect(await gradeAnswer('\\boxed{3}', '4', { sandbox })).toMatchObject({
        correct: false,
        reason: 'mismatch',
      });
      expect(await gradeAnswer('0.5', '\\frac12', { sandbox })).toMatchObject({
        correct: true,
        reason: 'exact',
      });
    } finally {
      await releaseSymbolicSessions(sandbox);
      await sandbox.close();
    }
  });

  it('`agentmath grade` prints the grade and exits 3 when the sandbox is unreachable', async () => {
    const failure = await run(
      process.execPath,
      [
        cli,
        'grade',
        '--sandbox',
        'http://127.0.0.1:1',
        '--prediction',
        '\\sqrt{8}',
        '--reference',
        '2\\sqrt{2}',
      ],
      { timeout: 60_000 },
    ).then(
      () => null,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(failure?.code).toBe(3);
    expect(JSON.parse(failure!.stdout)).toMatchObject({ correct: null, reason: 'grader-unavailable' });
    expect(failure!.stderr).toMatch(/1 grade\(s\) without a verdict/);
  });

  it('node killed during a run: the next grade retries on a fresh session, then reports no verdict', async () => {
    const node = await startNodeProcess(nodeArgs);
    started.push(node);
    const sandbox = new SandboxClient({ url: node.url });
    try {
      const before = await gradeAnswer('(x+1)^2', 'x^2+2x+1', { sandbox, timeoutMs: 60_000 });
      expect(before).toMatchObject({ correct: true, reason: 'symbolic' });
      node.child.kill('SIGKILL');
      await node.stop();
      const after = await gradeAnswer('\\frac{x^2-1}{x-1}', 'x+1', { sandbox, timeoutMs: 10_000 });
      expect(after).toMatchObject({ correct: null, reason: 'grader-unavailable' });
      // The warm session was lost with its node; the retry could not open another one.
      expect(after.correct === null && after.cause).toMatch(
        /session killed: (node|session)-lost.*retry: sandbox unavailable/,
      );
    } finally {
      await releaseSymbolicSessions(sandbox);
      await sandbox.close();
    }
  });

  it('one of two nodes killed: the check is retried on the other node and gets its verdict', async () => {
    const nodes = await Promise.all([startNodeProcess(nodeArgs), startNodeProcess(nodeArgs)]);
    started.push(...nodes);
    const cluster = new SandboxClusterClient({
      nodes: nodes.map((node) => node.url),
      healthIntervalMs: 60_000,
      healthTimeoutMs: 500,
      log: () => {},
    });
    try {
      await cluster.checkHealth();
      expect(await gradeAnswer('(x+1)^2', 'x^2+2x+1', { sandbox: cluster, timeoutMs: 60_000 })).toMatchObject(
        {
          correct: true,
        },
      );
      // Kill the node of the checker's warm session (it holds the only open session).
      const loads = await Promise.all(
        nodes.map(
          async (node) =>
            ((await (await fetch(`${node.url}/v1/health`)).json()) as { sessions: number }).sessions,
        ),
      );
      expect([...loads].sort()).toEqual([0, 1]);
      const busy = nodes[loads.indexOf(1)]!;
      busy.child.kill('SIGKILL');
      await busy.stop();
      const after = await gradeAnswer('\\sqrt{8}', '2\\sqrt{2}', { sandbox: cluster, timeoutMs: 60_000 });
      expect(after).toMatchObject({ correct: true });
    } finally {
      await releaseSymbolicSessions(cluster);
      await cluster.close();
    }
  });
});
