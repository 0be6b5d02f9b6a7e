/**
 * `agentmath eval` end to end, as a child process: a scripted OpenAI-compatible server with
 * known replies (right, wrong, with code blocks that run in the real jailed sandbox), every
 * metric checked against hand-computed values; then a run killed with SIGKILL halfway and
 * resumed, which must hold every (problem, sample) exactly once; then `agentmath report`.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { responseLength } from '../src/eval/tool-use-stats.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';
import { killAllClis, killGroup, startCli } from './cli-process.ts';
import { type Script, type ScriptedServer, startScriptedServer } from './eval-scripted-server.ts';
import { mathVerifySkipReason } from './grader-sandbox.ts';
import { expectRecordFiles } from './record-checks.ts';

let folder: string;
beforeAll(() => {
  folder = mkdtempSync(join(tmpdir(), 'agentmath-eval-cli-'));
});
afterAll(() => {
  killAllClis();
  rmSync(folder, { recursive: true, force: true });
});

/** Starts the CLI in the test folder. */
function startCliHere(args: string[]) {
  return startCli(args, { cwd: folder });
}

function readTrajectories(out: string): Trajectory[] {
  return readFileSync(join(out, 'trajectories.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Trajectory);
}

const final = (text: string) => ({ final: text });
const code = (source: string, before = '<think>Let me compute.\n') => ({ code: source, before });

// Four problems, three samples each. Hand-computed below.
const SCRIPT: Script = {
  P1: [
    [final('<think>3*4=12</think>\nThe answer is \\boxed{12}.')],
    [code('print(3*4)'), final('\nSo it is 12.</think>\nThe answer is \\boxed{12}.')],
    [final('<think>A guess.</think>\nThe answer is \\boxed{13}.')],
  ],
  P2: [
    [
      code('print(1/0)'),
      code('print(1/2)', '\nFix the division.\n'),
      final('</think>\nThe answer is \\boxed{3}.'),
    ],
    [final('<think>Half.</think>\nThe answer is \\boxed{0.5}.')],
    [final('<think>Half.</think>\nThe answer is \\boxed{\\frac{1}{2}}.')],
  ],
  P3: [
    [final('<think>Eight?</think>\nThe answer is \\boxed{8}.')],
    [final('<think>Eight.</think>\nThe answer is \\boxed{8}.')],
    [final('<think>I give up.</think>')],
  ],
  P4: [
    [final('<think>Almost.</think>\nThe answer is \\boxed{99}.')],
    [code('print(10**2)'), final('</think>\nThe answer is \\boxed{100}.')],
    [code('print(undefined_name)'), final('</think>\nThe answer is \\boxed{100}.')],
  ],
};

const problemKey = (prompt: string) => /Problem (P\d+)/.exec(prompt)?.[1];

describe('agentmath eval against a scripted OpenAI-compatible server', () => {
  let server: ScriptedServer;
  beforeAll(async () => {
    server = await startScriptedServer({ script: SCRIPT, problemKey });
  });
  afterAll(() => server.close());

  it('writes graded trajectories and a summary matching hand-computed metrics; report renders it', async () => {
    const bench = join(folder, 'toy.jsonl');
    writeFileSync(
      bench,
      [
        { id: 'P1', question: 'Problem P1: what is 3 times 4?', ground_truth: 12 },
        { id: 'P2', question: 'Problem P2: what is one half?', ground_truth: '\\frac{1}{2}' },
        { id: 'P3', question: 'Problem P3: what is 3 + 4?', ground_truth: '7' },
        { id: 'P4', question: 'Problem P4: what is 10 squared?', ground_truth: '100' },
      ]
        .map((row) => JSON.stringify(row))
        .join('\n'),
    );
    const out = join(folder, 'run');
    const args = [
      'eval',
      '--bench',
      bench,
      '-k',
      '3',
      '--concurrency',
      '3',
      '--out',
      out,
      '--engine',
      server.url,
    ];
    args.push(
      '--api',
      'openai',
      '--model',
      'scripted',
      '--dialect',
      'tags',
      '--seed',
      '0',
      '--sandbox-workers',
      '2',
    );
    const { done } = startCliHere(args);
    const result = await done;
    expect(result.stderr).not.toMatch(/agentmath: \[/);
    expect(result.code).toBe(0);
    expectRecordFiles(out, ['eval/config.json', 'eval/trajectories.jsonl', 'eval/summary.json']);

    const trajectories = readTrajectories(out);
    expect(trajectories.map((t) => `${t.problemId}/${t.sample}`).sort()).toEqual(
      ['P1', 'P2', 'P3', 'P4'].flatMap((id) => [0, 1, 2].map((sample) => `${id}/${sample}`)),
    );
    const byKey = new Map(trajectories.map((t) => [`${t.problemId}/${t.sample}`, t]));
    const grade = (key: string) => byKey.get(key)?.meta;
    expect(grade('P1/1')).toMatchObject({ reference: '12', correct: true, extracted: '12' });
    expect(grade('P1/2')).toMatchObject({ correct: false, extracted: '13', reason: 'mismatch' });
    expect(grade('P2/1')).toMatchObject({ reference: '\\frac{1}{2}', correct: true, extracted: '0.5' });
    expect(grade('P3/2')).toMatchObject({ correct: false, extracted: null, reason: 'no-answer' });
    // The code ran in the jail: real Python output and a real exception.
    expect(byKey.get('P1/1')?.toolCalls[0]?.outcome).toMatchObject({ status: 'ok', stdout: '12\n' });
    expect(byKey.get('P2/0')?.toolCalls.map((call) => call.outcome.status)).toEqual(['error', 'ok']);
    expect(byKey.get('P4/2')?.toolCalls[0]?.outcome).toMatchObject({ status: 'error' });

    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    // Correct samples per problem: P1 2/3, P2 2/3, P3 0/3, P4 2/3.
    expect(summary.perProblem.map((problem: { correct: number }) => problem.correct)).toEqual([2, 2, 0, 2]);
    expect(summary.avgAtK).toBeCloseTo(0.5, 12);
    // pass@2 with n=3, c=2: 1 - C(1,2)/C(3,2) = 1; with c=0: 0.
    expect(summary.passAtK).toEqual({ 1: expect.closeTo(0.5, 12), 2: 0.75, 3: 0.75 });
    // Votes: P1 12 (2) ✓; P2 {0.5, 1/2} (2) beats 3 (1) ✓ — without grouping, a three-way tie
    // would go to the earliest, the wrong 3; P3 8 ✗; P4 100 (2) ✓.
    expect(
      summary.perProblem.map((problem: { majority: { answer: string } }) => problem.majority.answer),
    ).toEqual(['12', '0.5', '8', '100']);
    expect(summary.majAtK).toBe(0.75);
    // 5 calls over 12 trajectories; 4 use code; 2 of 5 calls fail; of the 2 with a failure, P2/0 recovers.
    expect(summary.toolUse).toEqual({
      trajectories: 12,
      codeCalls: 5,
      codeCallsPerTrajectory: 5 / 12,
      codeUsageRate: 4 / 12,
      codeErrorRate: 2 / 5,
      trajectoriesWithError: 2,
      selfCorrected: 1,
      selfCorrectionRate: 0.5,
    });
    expect(summary.finishReasons).toEqual({ answer: 11, 'no-answer': 1 });
    expect(summary.length.unit).toBe('chars');
    // A text-only reply without code is its scripted text, character for character.
    expect(responseLength(byKey.get('P1/0')!, 'chars')).toBe(
      '<think>3*4=12</think>\nThe answer is \\boxed{12}.'.length,
    );
    expect(summary.length.max).toBe(Math.max(...trajectories.map((t) => responseLength(t, 'chars'))));
    expect(summary.complete).toBe(true);

    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    expect(config).toMatchObject({ benchmark: 'toy', k: 3, concurrency: 3, dialect: 'tags', seed: 0 });
    expect(result.stdout).toContain('avg@3 50.0%');

    // Rerunning into the same folder without --resume is refused.
    const again = await startCliHere(args).done;
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/RUN_FOLDER_REFUSED.*--resume/);

    const report = await startCliHere(['report', out]).done;
    expect(report.code).toBe(0);
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html.match(/<svg /g)).toHaveLength(4);
    expect(html).toContain('P4');
  }, 200_000);
});

const mathVerifyMissing = mathVerifySkipReason();

describe.skipIf(mathVerifyMissing !== null)('agentmath eval --grader math-verify', () => {
  let server: ScriptedServer;
  beforeAll(async () => {
    server = await startScriptedServer({ script: SCRIPT, problemKey });
  });
  afterAll(() => server.close());

  it('grades every trajectory with Math-Verify in the jail and records the grader in the run', async () => {
    const bench = join(folder, 'toy-math-verify.jsonl');
    writeFileSync(
      bench,
      [
        { id: 'P1', question: 'Problem P1: what is 3 times 4?', ground_truth: 12 },
        { id: 'P2', question: 'Problem P2: what is one half?', ground_truth: '\\frac{1}{2}' },
        { id: 'P3', question: 'Problem P3: what is 3 + 4?', ground_truth: '7' },
        { id: 'P4', question: 'Problem P4: what is 10 squared?', ground_truth: '100' },
      ]
        .map((row) => JSON.stringify(row))
        .join('\n'),
    );
    const out = join(folder, 'run-math-verify');
    const { done } = startCliHere([
      'eval',
      '--bench',
      bench,
      '-k',
      '3',
      '--concurrency',
      '3',
      '--out',
      out,
      '--engine',
      server.url,
      '--api',
      'openai',
      '--model',
      'scripted',
      '--seed',
      '0',
      '--sandbox-workers',
      '2',
      '--grader',
      'math-verify',
    ]);
    const result = await done;
    expect(result.stderr).not.toMatch(/agentmath: \[/);
    expect(result.code).toBe(0);
    const byKey = new Map(readTrajectories(out).map((t) => [`${t.problemId}/${t.sample}`, t]));
    const grade = (key: string) => byKey.get(key)?.meta;
    expect(grade('P1/0')).toMatchObject({ correct: true, reason: 'math-verify' });
    expect(grade('P1/2')).toMatchObject({ correct: false, reason: 'mismatch' });
    expect(grade('P2/1')).toMatchObject({ correct: true, reason: 'math-verify' });
    expect(grade('P3/2')).toMatchObject({ correct: false, reason: 'no-answer' });
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.perProblem.map((problem: { correct: number }) => problem.correct)).toEqual([2, 2, 0, 2]);
    expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'))).toMatchObject({
      grader: 'math-verify',
    });
  }, 120_000);
});

describe('agentmath eval killed and resumed', () => {
  const problems = Array.from({ length: 8 }, (_, index) => `Q${index + 1}`);
  const script: Script = Object.fromEntries(
    problems.map((id, index) => [id, [0, 1].map(() => [final(`<think>ok</think>\n\\boxed{${index}}`)])]),
  );
  let server: ScriptedServer;
  beforeAll(async () => {
    server = await startScriptedServer({
      script,
      problemKey: (prompt) => /Problem (Q\d+)/.exec(prompt)?.[1],
      delayMs: 150,
    });
  });
  afterAll(() => server.close());

  it('holds every (problem, sample) exactly once after SIGKILL and --resume', async () => {
    const bench = join(folder, 'eight.jsonl');
    writeFileSync(
      bench,
      problems
        .map((id, index) => JSON.stringify({ id, problem: `Problem ${id}`, answer: String(index) }))
        .join('\n'),
    );
    const out = join(folder, 'killed');
    const args = [
      'eval',
      '--bench',
      bench,
      '-k',
      '2',
      '--concurrency',
      '2',
      '--out',
      out,
      '--engine',
      server.url,
    ];
    args.push('--api', 'openai', '--model', 'scripted', '--seed', '0', '--sandbox-workers', '1');
    const first = startCliHere(args);
    const file = join(out, 'trajectories.jsonl');
    const lineCount = () => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').length - 1 : 0);
    // Poll until some (not all) trajectories are written, then kill without warning.
    const exited = first.done.then(() => true);
    while (lineCount() < 5) {
      const over = await Promise.race([
        exited,
        new Promise((resolve) => setTimeout(() => resolve(false), 20)),
      ]);
      if (over) break;
    }
    killGroup(first.child);
    const killed = await first.done;
    expect(killed.code).toBe(null); // it died of the signal, not of finishing
    const before = lineCount();
    expect(before).toBeGreaterThanOrEqual(5);
    expect(before).toBeLessThan(16);
    expect(existsSync(join(out, 'summary.json'))).toBe(false);

    const resumed = await startCliHere([...args, '--resume']).done;
    expect(resumed.code).toBe(0);
    const keys = readTrajectories(out).map((t) => `${t.problemId}/${t.sample}`);
    expect(keys).toHaveLength(16);
    expect(new Set(keys).size).toBe(16);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary).toMatchObject({ complete: true, trajectories: 16, avgAtK: 1 });
    expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).resumed).toBe(true);
  }, 200_000);

  it('stops cleanly on SIGINT: nothing half-done is written, and it says how to resume', async () => {
    const bench = join(folder, 'eight.jsonl');
    const out = join(folder, 'interrupted');
    const args = [
      'eval',
      '--bench',
      bench,
      '-k',
      '2',
      '--concurrency',
      '2',
      '--out',
      out,
      '--engine',
      server.url,
    ];
    args.push('--api', 'openai', '--model', 'scripted', '--seed', '0', '--sandbox-workers', '1');
    const run = startCliHere(args);
    const file = join(out, 'trajectories.jsonl');
    const exited = run.done.then(() => true);
    while (!existsSync(file) || readFileSync(file, 'utf8').split('\n').length - 1 < 3) {
      const over = await Promise.race([
        exited,
        new Promise((resolve) => setTimeout(() => resolve(false), 20)),
      ]);
      if (over) break;
    }
    run.child.kill('SIGINT');
    const result = await run.done;
    // Stopped gracefully, then it dies of the signal that stopped it: the shell sees 130.
    expect({ code: result.code, signal: result.signal }).toEqual({ code: null, signal: 'SIGINT' });
    expect(result.stderr).toMatch(
      /interrupted after \d+\/16; resume with:\n {2}agentmath eval .*--out \S+ --resume/,
    );
    const written = readTrajectories(out);
    expect(written.length).toBeLessThan(16);
    expect(written.every((trajectory) => trajectory.finish?.reason === 'answer')).toBe(true);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary).toMatchObject({ complete: false, trajectories: written.length });
  }, 200_000);
});
