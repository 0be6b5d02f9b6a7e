import { describe, expect, it } from 'vitest';
import { getDialect, parseResponse } from '../../protocol/index.ts';
import type { ExecutionOutcome, SandboxSession } from '../../sandbox/types.ts';
import { ARITH_SPACED_LEVEL } from './arith-generator.ts';
import { arithTrainProblems } from './arith-problems.ts';
import { arithToolPlan } from './arith-tool-plan.ts';
import { showsFailedFirstAttempt, writeArithToolSolution } from './arith-tool-solution.ts';

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

  it('writes the markdown dialect: fenced code ending at its stop string, no reasoning wrapper', async () => {
    const markdown = getDialect('markdown');
    const session = scriptedSession([{ status: 'ok', stdout: `${problem!.answer}\n`, stderr: '', ms: 3 }]);
    const result = await writeArithToolSolution(problem!, { session, dialect: markdown });
    expect(result.status).toBe('ok');
    if (result.status !== 'ok') return;
    const [first, tool, last] = result.solution.segments;
    expect(first!.text).toMatch(/^[^<`]+\n```python\nprint\(pow\(\d+, \d+, \d+\)\)\n```\n$/);
    expect(markdown.stopStrings.some((stop) => first!.text.endsWith(stop))).toBe(true);
    expect(tool).toEqual({ kind: 'tool', text: markdown.renderToolResult(result.outcome) });
    expect(tool!.text).toContain(`\`\`\`output\n${problem!.answer}\n\`\`\``);
    expect(last!.text).toMatch(new RegExp(`^[^<]+\\nThe answer is \\\\boxed\\{${problem!.answer}\\}\\.$`));
    const parsed = parseResponse(
      result.solution.segments.map((segment) => segment.text).join(''),
      markdown.markup,
    );
    expect(parsed.issues).toEqual([]);
    expect(parsed.answer).toBe(problem!.answer);
    expect(parsed.parts.map((part) => part.kind)).toContain('tool-output');
  });
});

describe('writeArithToolSolution at the spaced level (scripted session)', () => {
  const [problem] = arithTrainProblems({
    seed: 1,
    count: 1,
    kinds: ['product'],
    levels: [ARITH_SPACED_LEVEL],
  });
  const plan = arithToolPlan(problem!.spec);
  const syntaxError: ExecutionOutcome = {
    status: 'error',
    stdout: '',
    stderr: '',
    exception: `  File "<cell>", line 1\n    ${plan.firstAttempt!.code}\n          ^^^^^\nSyntaxError: invalid syntax. Perhaps you forgot a comma?`,
    ms: 1,
  };
  const printed: ExecutionOutcome = { status: 'ok', stdout: `${problem!.answer}\n`, stderr: '', ms: 1 };

  it('a failing first program, its rendered error, the fix, then the answer: two code turns the agent loop would cut the same way', async () => {
    const session = scriptedSession([syntaxError, printed]);
    const result = await writeArithToolSolution(problem!, { session, failedFirstShare: 1 });
    expect(result.status).toBe('ok');
    if (result.status !== 'ok') return;
    expect(session.calls).toEqual([plan.firstAttempt!.code, plan.code]);
    const segments = result.solution.segments;
    expect(segments.map((segment) => segment.kind)).toEqual(['model', 'tool', 'model', 'tool', 'model']);
    expect(segments[0]!.text).toBe(`<think>${plan.lead} <code>\n${plan.firstAttempt!.code}\n</code>`);
    expect(segments[1]!.text).toBe(tags.renderToolResult(syntaxError));
    expect(segments[1]!.text).toContain('SyntaxError');
    expect(segments[2]!.text).toBe(`${plan.firstAttempt!.fix} <code>\n${plan.code}\n</code>`);
    // The loop finds the second block in the turn's own text (after the output block).
    expect(tags.closedCodeAtEnd(segments[2]!.text, '</code>')?.code).toBe(plan.code);
    expect(segments[3]!.text).toBe(tags.renderToolResult(printed));
    const parsed = parseResponse(segments.map((segment) => segment.text).join(''), tags.markup);
    expect(parsed.issues).toEqual([]);
    expect(parsed.answer).toBe(problem!.answer);
    expect(parsed.parts.filter((part) => part.kind === 'code')).toHaveLength(2);
  });

  it('the rest write the program with _ first: one code turn with the direct lead', async () => {
    const session = scriptedSession([printed]);
    const result = await writeArithToolSolution(problem!, { session, failedFirstShare: 0 });
    expect(result.status).toBe('ok');
    if (result.status !== 'ok') return;
    expect(session.calls).toEqual([plan.code]);
    expect(result.solution.segments.map((segment) => segment.kind)).toEqual(['model', 'tool', 'model']);
    expect(result.solution.segments[0]!.text).toBe(`<think>${plan.directLead} <code>\n${plan.code}\n</code>`);
  });

  it('a first program that runs is reported, not written', async () => {
    const session = scriptedSession([printed]);
    expect(await writeArithToolSolution(problem!, { session, failedFirstShare: 1 })).toEqual({
      status: 'first-attempt-ran',
      outcome: printed,
    });
  });

  it('the share picks about that fraction of problems, by id', () => {
    const ids = arithTrainProblems({ seed: 2, count: 400, levels: [ARITH_SPACED_LEVEL] }).map(
      (problem) => problem.id,
    );
    const failing = ids.filter((id) => showsFailedFirstAttempt(id)).length;
    expect(failing).toBeGreaterThan(150);
    expect(failing).toBeLessThan(250);
    expect(
      ids.filter((id) => showsFailedFirstAttempt(id, 0.2)).every((id) => showsFailedFirstAttempt(id)),
    ).toBe(true);
  });

  it('levels 1..4 never run a first attempt, whatever the share', async () => {
    const [plain] = arithTrainProblems({ seed: 1, count: 1, kinds: ['product'], levels: [3] });
    const session = scriptedSession([{ status: 'ok', stdout: `${plain!.answer}\n`, stderr: '', ms: 1 }]);
    const result = await writeArithToolSolution(plain!, { session, failedFirstShare: 1 });
    expect(result.status).toBe('ok');
    expect(session.calls).toHaveLength(1);
  });
});
