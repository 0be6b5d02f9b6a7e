import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fixtureTrajectory } from '../../test/eval-fixtures.ts';
import type { BenchmarkProblem } from './benchmark-problem.ts';
import { type EvalProgress, type GradeTrajectory, runEval, type SolveTrajectory } from './eval-runner.ts';

const problems: BenchmarkProblem[] = [
  { id: 'p1', problem: 'one', answer: '1' },
  { id: 'p2', problem: 'two', answer: '2' },
  { id: 'p3', problem: 'three', answer: '3' },
];
const grade: GradeTrajectory = async (trajectory, problem) => ({
  correct: trajectory.answer === problem.answer,
  extracted: trajectory.answer,
  reason:
    trajectory.answer === null ? 'no-answer' : trajectory.answer === problem.answer ? 'exact' : 'mismatch',
});
const equal = (left: string, right: string) => left === right;
// Sample s of problem pN answers N when s is even, else 0.
const solve: SolveTrajectory = async (problem, sample) =>
  fixtureTrajectory({ problemId: 'ignored', sample: 99, answer: sample % 2 === 0 ? problem.answer : '0' });

let folder: string;
beforeEach(() => {
  folder = join(mkdtempSync(join(tmpdir(), 'agentmath-run-')), 'out');
});
afterEach(() => rmSync(join(folder, '..'), { recursive: true, force: true }));

const base = () => ({
  benchmark: { name: 'toy', problems },
  k: 2,
  concurrency: 2,
  outDir: folder,
  resume: false,
  config: { engine: 'test' },
  solve,
  grade,
  equivalent: equal,
});

function lines(): { problemId: string; sample: number; meta: Record<string, unknown> }[] {
  return readFileSync(join(folder, 'trajectories.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
}

describe('runEval', () => {
  it('solves k samples per problem, grades each and writes config, trajectories and summary', async () => {
    const seen: EvalProgress[] = [];
    const result = await runEval({ ...base(), onProgress: (progress) => seen.push(progress) });
    expect(result.status).toBe('completed');
    const written = lines();
    expect(written.map((line) => `${line.problemId}/${line.sample}`).sort()).toEqual([
      'p1/0',
      'p1/1',
      'p2/0',
      'p2/1',
      'p3/0',
      'p3/1',
    ]);
    const first = written.find((line) => line.problemId === 'p2' && line.sample === 1);
    expect(first?.meta).toEqual({ reference: '2', correct: false, reason: 'mismatch', extracted: '0' });
    expect(result.summary).toMatchObject({ avgAtK: 0.5, passAtK: { 1: 0.5, 2: 1 }, complete: true });
    const config = JSON.parse(readFileSync(join(folder, 'config.json'), 'utf8'));
    expect(config).toMatchObject({ engine: 'test', benchmark: 'toy', k: 2, concurrency: 2, resumed: false });
    expect(JSON.parse(readFileSync(join(folder, 'summary.json'), 'utf8')).avgAtK).toBe(0.5);
    expect(seen.at(-1)).toMatchObject({ done: 6, total: 6, correct: 3, running: 0 });
  });

  it('refuses a non-empty folder without resume, and resumes skipping what is done', async () => {
    await runEval({ ...base(), k: 1 });
    await expect(runEval(base())).rejects.toThrow(/not empty: pass --resume .* or choose another --out/);
    const solved: string[] = [];
    const result = await runEval({
      ...base(),
      resume: true,
      solve: async (problem, sample, signal) => {
        solved.push(`${problem.id}/${sample}`);
        return solve(problem, sample, signal);
      },
    });
    expect(solved.sort()).toEqual(['p1/1', 'p2/1', 'p3/1']);
    expect(lines()).toHaveLength(6);
    expect(result.summary.trajectories).toBe(6);
    await expect(
      runEval({ ...base(), resume: true, benchmark: { name: 'other', problems } }),
    ).rejects.toThrow(/run on benchmark "toy", not "other"/);
  });

  it('drops a torn last line on resume', async () => {
    await runEval({ ...base(), k: 1 });
    const path = join(folder, 'trajectories.jsonl');
    const text = readFileSync(path, 'utf8');
    const kept = text.trim().split('\n').slice(0, 2).join('\n');
    writeFileSync(path, `${kept}\n{"id":"torn","probl`);
    const warnings: string[] = [];
    const result = await runEval({
      ...base(),
      k: 1,
      resume: true,
      onWarning: (message) => warnings.push(message),
    });
    expect(result.written).toBe(1);
    expect(lines()).toHaveLength(3);
    expect(warnings.some((message) => /removed a truncated last line/.test(message))).toBe(true);
  });

  it('on abort, does not write in-flight trajectories and reports the run as interrupted', async () => {
    const controller = new AbortController();
    let started = 0;
    const result = await runEval({
      ...base(),
      concurrency: 2,
      signal: controller.signal,
      solve: (problem, sample, signal) => {
        started++;
        if (started <= 2) return solve(problem, sample, signal);
        // The third one hangs until aborted, like an agent waiting on its engine.
        if (started === 3) setImmediate(() => controller.abort());
        return new Promise((resolve) => {
          signal.addEventListener('abort', () =>
            resolve(fixtureTrajectory({ problemId: problem.id, sample, answer: null, finish: 'aborted' })),
          );
        });
      },
    });
    expect(result.status).toBe('interrupted');
    expect(lines()).toHaveLength(2);
    expect(lines().every((line) => line.meta.reason !== 'no-answer')).toBe(true);
    expect(result).toMatchObject({ done: 2, total: 6 });
    expect(existsSync(join(folder, 'summary.json'))).toBe(true);
  });

  it('keeps error-finished trajectories out of the results and retries them on resume', async () => {
    const broken = (problem: BenchmarkProblem, sample: number) => ({
      ...fixtureTrajectory({ problemId: problem.id, sample, answer: null, finish: 'error' }),
      finish: {
        reason: 'error' as const,
        error: { code: 'ENGINE_UNAVAILABLE', message: 'connection refused' },
      },
    });
    const first = await runEval({
      ...base(),
      solve: async (problem, sample, signal) =>
        problem.id === 'p2' ? broken(problem, sample) : solve(problem, sample, signal),
    });
    expect(first).toMatchObject({ status: 'incomplete', failed: 2, done: 4, total: 6, written: 4 });
    expect(
      lines()
        .map((line) => line.problemId)
        .sort(),
    ).toEqual(['p1', 'p1', 'p3', 'p3']);
    const errors = readFileSync(join(folder, 'errors.jsonl'), 'utf8').trim().split('\n');
    expect(errors.map((line) => JSON.parse(line).problemId)).toEqual(['p2', 'p2']);
    expect(first.summary.complete).toBe(false);

    const retried: string[] = [];
    const second = await runEval({
      ...base(),
      resume: true,
      solve: async (problem, sample, signal) => {
        retried.push(`${problem.id}/${sample}`);
        return solve(problem, sample, signal);
      },
    });
    expect(retried.sort()).toEqual(['p2/0', 'p2/1']);
    expect(second).toMatchObject({ status: 'completed', failed: 0, done: 6 });
  });

  it('keeps grades without a verdict apart from accuracy and grades them again (only) on resume', async () => {
    // The grader is down for problem p2: its two trajectories get no verdict.
    const down: GradeTrajectory = async (trajectory, problem) =>
      problem.id === 'p2'
        ? {
            correct: null,
            extracted: trajectory.answer,
            reason: 'grader-unavailable',
            cause: 'sandbox unreachable',
          }
        : grade(trajectory, problem);
    const first = await runEval({ ...base(), grade: down });
    expect(first.status).toBe('incomplete');
    expect(first.summary).toMatchObject({ gradeUnavailable: 2, trajectories: 4, complete: false });
    // p1 and p3 answer right on sample 0 only: avg 0.5 over the problems with a verdict, not 2/6.
    expect(first.summary.avgAtK).toBe(0.5);
    expect(first.summary.perProblem.find((entry) => entry.id === 'p2')).toMatchObject({
      samples: 0,
      gradeUnavailable: 2,
    });
    const stored = lines().find((line) => line.problemId === 'p2');
    expect(stored?.meta).toMatchObject({
      correct: null,
      reason: 'grader-unavailable',
      gradeCause: 'sandbox unreachable',
    });

    const solved: string[] = [];
    const regraded: string[] = [];
    const second = await runEval({
      ...base(),
      resume: true,
      solve: async (problem, sample, signal) => {
        solved.push(`${problem.id}/${sample}`);
        return solve(problem, sample, signal);
      },
      grade: async (trajectory, problem) => {
        regraded.push(`${problem.id}/${trajectory.sample}`);
        return grade(trajectory, problem);
      },
    });
    expect(solved).toEqual([]);
    expect(regraded.sort()).toEqual(['p2/0', 'p2/1']);
    expect(second.status).toBe('completed');
    expect(second.summary).toMatchObject({
      gradeUnavailable: 0,
      trajectories: 6,
      complete: true,
      avgAtK: 0.5,
    });
    const p2 = lines().filter((line) => line.problemId === 'p2' && line.sample === 1);
    expect(p2.map((line) => line.meta.correct)).toEqual([null, false]);
    expect(p2[1]!.meta.gradeCause).toBeUndefined();
  });

  it('stops after too many error-finished trajectories in a row', async () => {
    let calls = 0;
    await expect(
      runEval({
        ...base(),
        concurrency: 1,
        maxConsecutiveErrors: 3,
        solve: async (problem, sample) => {
          calls++;
          return {
            ...fixtureTrajectory({ problemId: problem.id, sample, answer: null }),
            finish: { reason: 'error' as const, error: { code: 'ENGINE_UNAVAILABLE', message: 'refused' } },
          };
        },
      }),
    ).rejects.toMatchObject({
      code: 'EVAL_INFRASTRUCTURE_FAILING',
      message: expect.stringMatching(/3 trajectories in a row.*ENGINE_UNAVAILABLE/),
    });
    expect(calls).toBe(3);
  });

  it('stops the run and rethrows when the solver throws', async () => {
    await expect(
      runEval({
        ...base(),
        solve: async (problem) => {
          if (problem.id === 'p2') throw new Error('engine unreachable');
          return fixtureTrajectory({ problemId: problem.id, sample: 0, answer: problem.answer });
        },
      }),
    ).rejects.toThrow('engine unreachable');
  });
});
