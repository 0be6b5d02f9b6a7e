import { describe, expect, it } from 'vitest';
import { getDialect, parseResponse } from '../../protocol/index.ts';
import type { ExecutionOutcome, SandboxSession } from '../../sandbox/types.ts';
import { arithTrainProblems } from './arith-problems.ts';
import { ArithDialectMismatchError, writeArithToolSolution } from './arith-tool-solution.ts';

/** A session double that answers each call with the next scripted outcome and records the code. */
function scriptedSession(outcomes: ExecutionOutcome[]): SandboxSession & { calls: string[] } {
  const calls: string[] = [];
  return {
    id: 'scripted',
    calls,
    async execute(code) {
      calls.push(code);
      const outcome = outcomes.shift();
      if (outcome === undefined) throw new Error('no scripted outcome left');
      return outcome;
    },
    async close() {},
  };
}

const tags = getDialect('tags');

describe('writeArithToolSolution (scripted session, real tags dialect)', () => {
  const [problem] = arithTrainProblems({ seed: 1, count: 1, kinds: ['mod-power'], levels: [2] });

  it('splits the text where the agent loop does: model up to </code>, tool = rendered output', async () => {
    const session = scriptedSession([{ status: 'ok', stdout: `${problem!.answer}\n`, stderr: '', ms: 3 }]);
    const result = await writeArithToolSolution(problem!, { session });
    expect(result.status).toBe('ok');
    if (result.status !== 'ok') return;
    const [first, tool, last] = result.solution.segments;
    expect(session.calls).toEqual([
      first!.text.slice(first!.text.indexOf('<code>\n') + 7, -'\n</code>'.length),
    ]);
    expect(first!.kind).toBe('model');
    expect(first!.text).toMatch(/^<think>[^<]+ <code>\nprint\(pow\(\d+, \d+, \d+\)\)\n<\/code>$/);
    expect(tags.stopStrings.some((stop) => first!.text.endsWith(stop))).toBe(true);
    expect(tool).toEqual({ kind: 'tool', text: `\n<interpreter>\n${problem!.answer}\n</interpreter>\n` });
    expect(tool!.text).toBe(tags.renderToolResult(result.outcome));
    expect(last!.kind).toBe('model');
    expect(last!.text).toMatch(new RegExp(`</think>\\nThe answer is \\\\boxed\\{${problem!.answer}\\}\\.$`));
    const parsed = parseResponse(
      result.solution.segments.map((segment) => segment.text).join(''),
      tags.markup,
    );
    expect(parsed.issues).toEqual([]);
    expect(parsed.answer).toBe(problem!.answer);
    expect(parsed.parts.map((part) => part.kind)).toContain('tool-output');
  });

  it('a run that fails or prints something else is a value, not a record', async () => {
    const error: ExecutionOutcome = {
      status: 'error',
      stdout: '',
      stderr: '',
      exception: 'Traceback (most recent call last):\nNameError: name "x" is not defined',
      ms: 2,
    };
    expect(await writeArithToolSolution(problem!, { session: scriptedSession([error]) })).toEqual({
      status: 'tool-failed',
      outcome: error,
    });
    const timeout: ExecutionOutcome = { status: 'timeout', stdout: '', limitMs: 20_000 };
    expect(await writeArithToolSolution(problem!, { session: scriptedSession([timeout]) })).toMatchObject({
      status: 'tool-failed',
    });
    const wrong: ExecutionOutcome = { status: 'ok', stdout: '12\n', stderr: '', ms: 1 };
    expect(await writeArithToolSolution(problem!, { session: scriptedSession([wrong]) })).toEqual({
      status: 'mismatch',
      output: '12',
      expected: problem!.answer,
    });
  });

  it('refuses a dialect that would not read its code block', async () => {
    const session = scriptedSession([]);
    await expect(
      writeArithToolSolution(problem!, { session, dialect: getDialect('markdown') }),
    ).rejects.toThrow(ArithDialectMismatchError);
    expect(session.calls).toEqual([]);
  });
});
