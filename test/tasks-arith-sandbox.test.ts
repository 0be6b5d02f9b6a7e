/**
 * Arith tool solutions against the real local sandbox pool (bubblewrap jail) and the real
 * tags dialect: the interpreter block is the dialect's rendering of a real execution, and
 * what it shows equals the reference answer computed with BigInt.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractBoxedAnswer, getDialect, parseResponse } from '../src/protocol/index.ts';
import { createLocalSandbox, type LocalSandboxPool } from '../src/sandbox/index.ts';
import {
  ARITH_SPACED_LEVEL,
  arithEvalProblems,
  arithToolPlan,
  arithTrainProblems,
  showsFailedFirstAttempt,
  taskSolutionSchema,
  writeArithSftDataset,
  writeArithToolSolution,
} from '../src/tasks/index.ts';

const dialect = getDialect('tags');
let pool: LocalSandboxPool;
let directory: string;

beforeAll(async () => {
  pool = createLocalSandbox({ maxWorkers: 3, warmWorkers: 0, preload: [] }, { log: () => {} });
  directory = await mkdtemp(join(tmpdir(), 'agentmath-arith-sandbox-'));
});
afterAll(async () => {
  await pool?.close();
  await rm(directory, { recursive: true, force: true });
});

describe('arith tool solutions in the real sandbox', () => {
  it('interpreter output is the real execution, rendered by the dialect, equal to the reference', async () => {
    const problems = [...arithTrainProblems({ seed: 21, count: 32 }), ...arithEvalProblems({ count: 16 })];
    const session = await pool.openSession();
    try {
      for (const problem of problems) {
        const result = await writeArithToolSolution(problem, { session, dialect });
        expect(result.status, problem.problem).toBe('ok');
        if (result.status !== 'ok') continue;
        const [code, tool, conclusion] = result.solution.segments;
        expect(code!.kind).toBe('model');
        expect(code!.text.endsWith('</code>')).toBe(true);
        expect(dialect.stopStrings).toContain('</code>');
        expect(tool).toEqual({ kind: 'tool', text: dialect.renderToolResult(result.outcome) });
        expect(tool!.text).toBe(`\n<interpreter>\n${problem.answer}\n</interpreter>\n`);
        expect(conclusion!.kind).toBe('model');
        const text = result.solution.segments.map((segment) => segment.text).join('');
        expect(extractBoxedAnswer(text)).toBe(problem.answer);
        const parsed = parseResponse(text, dialect.markup);
        expect(parsed.issues).toEqual([]);
        expect(parsed.answer).toBe(problem.answer);
      }
    } finally {
      await session.close();
    }
  });

  it('a failing program yields a value, not a record', async () => {
    const [problem] = arithTrainProblems({ seed: 2, count: 1, kinds: ['product'] });
    const session = await pool.openSession();
    try {
      const wrong = { ...problem!, answer: '0' };
      const result = await writeArithToolSolution(wrong, { session, dialect });
      expect(result).toMatchObject({ status: 'mismatch', expected: '0' });
    } finally {
      await session.close();
    }
  });

  it('writes a tool-style dataset with concurrent sessions, and resumes', async () => {
    const out = join(directory, 'tool.jsonl');
    const first = await writeArithSftDataset({
      out,
      count: 12,
      seed: 8,
      style: 'tool',
      sandbox: pool,
      dialect,
      concurrency: 2,
    });
    expect(first).toMatchObject({ total: 12, resumed: 0, written: 12, skipped: [] });
    const second = await writeArithSftDataset({
      out,
      count: 20,
      seed: 8,
      style: 'tool',
      sandbox: pool,
      dialect,
      concurrency: 3,
    });
    expect(second).toMatchObject({ total: 20, resumed: 12, written: 8, skipped: [] });
    const records = (await readFile(out, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => taskSolutionSchema.parse(JSON.parse(line)));
    const expected = new Map(
      arithTrainProblems({ seed: 8, count: 20 }).map((problem) => [problem.id, problem.answer]),
    );
    expect(records).toHaveLength(20);
    for (const record of records) {
      expect(record.style).toBe('tool');
      expect(record.segments.map((segment) => segment.kind)).toEqual(['model', 'tool', 'model']);
      expect(record.segments[1]!.text).toBe(
        `\n<interpreter>\n${expected.get(record.problem.id)}\n</interpreter>\n`,
      );
    }
  });

  it('spaced level: the first program of a record really fails in the jail, shown as a rollout reads it, and the fix prints the answer', async () => {
    const problems = [
      ...arithTrainProblems({ seed: 23, count: 12, levels: [ARITH_SPACED_LEVEL] }),
      ...arithEvalProblems({ count: 4, levels: [ARITH_SPACED_LEVEL] }),
    ];
    for (const problem of problems) {
      // A fresh session, as the agent loop gives a trajectory's first call.
      const session = await pool.openSession();
      const check = await pool.openSession();
      try {
        const result = await writeArithToolSolution(problem, { session, dialect, failedFirstShare: 1 });
        expect(result.status, problem.problem).toBe('ok');
        if (result.status !== 'ok') continue;
        const segments = result.solution.segments;
        expect(segments.map((segment) => segment.kind)).toEqual(['model', 'tool', 'model', 'tool', 'model']);
        const failed = await check.execute(arithToolPlan(problem.spec).firstAttempt!.code, {
          timeoutMs: 20_000,
        });
        expect(failed.status).toBe('error');
        expect(segments[1]!.text).toBe(dialect.renderToolResult(failed));
        expect(segments[1]!.text).toMatch(
          /^\n<interpreter>\nFile "<cell-1>", line \d+\n[\s\S]*\nSyntaxError: /,
        );
        expect(segments[3]!.text).toBe(`\n<interpreter>\n${problem.answer}\n</interpreter>\n`);
        const text = segments.map((segment) => segment.text).join('');
        const parsed = parseResponse(text, dialect.markup);
        expect(parsed.issues).toEqual([]);
        expect(parsed.answer).toBe(problem.answer);
      } finally {
        await session.close();
        await check.close();
      }
    }
  });

  it('spaced level: a dataset holds failing-first records for the share picked by id, the rest right first', async () => {
    const out = join(directory, 'spaced.jsonl');
    const summary = await writeArithSftDataset({
      out,
      count: 16,
      seed: 4,
      levels: [ARITH_SPACED_LEVEL],
      style: 'tool',
      sandbox: pool,
      dialect,
      concurrency: 2,
    });
    expect(summary).toMatchObject({ total: 16, written: 16, skipped: [] });
    const records = (await readFile(out, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => taskSolutionSchema.parse(JSON.parse(line)));
    for (const record of records) {
      const tools = record.segments.filter((segment) => segment.kind === 'tool');
      expect(tools).toHaveLength(showsFailedFirstAttempt(record.problem.id) ? 2 : 1);
      if (tools.length === 2) expect(tools[0]!.text).toContain('File "<cell-1>"');
      expect(record.segments.at(-2)!.text).toMatch(/^\n<interpreter>\n-?\d+\n<\/interpreter>\n$/);
    }
  });
});
