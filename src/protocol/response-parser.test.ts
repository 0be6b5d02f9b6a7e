import { describe, expect, it } from 'vitest';
import { markdownDialect } from './markdown-dialect.ts';
import { finalAnswer, parseResponse } from './response-parser.ts';
import { tagsDialect } from './tags-dialect.ts';

const tags = (text: string) => parseResponse(text, tagsDialect.markup);
const markdown = (text: string) => parseResponse(text, markdownDialect.markup);
const shape = (parsed: ReturnType<typeof tags>) =>
  parsed.parts.map((part) => `${part.kind}${part.closed ? '' : '(open)'}:${part.text.trim()}`);

describe('parseResponse, well-formed', () => {
  it('reads tags with reasoning, two code cells, and an answer', () => {
    const parsed = tags(
      '<think>a<code>x=1</code><interpreter>\n</interpreter>b<code>print(x)</code><interpreter>1</interpreter>c</think>' +
        'The answer is \\boxed{1}.',
    );
    expect(shape(parsed)).toEqual([
      'reasoning:a',
      'code:x=1',
      'tool-output:',
      'reasoning:b',
      'code:print(x)',
      'tool-output:1',
      'reasoning:c',
      'answer:The answer is \\boxed{1}.',
    ]);
    expect(parsed.answer).toBe('1');
  });

  it('gives offsets that slice the text back out', () => {
    const text = 'Try.\n```python\nprint(1)\n```\n```output\n1\n```\nSo \\boxed{1}.';
    const parsed = markdown(text);
    for (const part of parsed.parts) expect(text.slice(part.start, part.end)).toBe(part.text);
    expect(shape(parsed)).toEqual([
      'reasoning:Try.',
      'code:print(1)',
      'tool-output:1',
      'answer:So \\boxed{1}.',
    ]);
  });

  it('keeps other markdown fences in the prose and pairs their closing fence', () => {
    const parsed = markdown('A table:\n```\n| a |\n```\n```python\nprint(2)\n```\n');
    expect(shape(parsed)).toEqual(['reasoning:A table:\n```\n| a |\n```', 'code:print(2)']);
    expect(parsed.issues).toEqual([]);
  });

  it('ignores a box printed by code or output when extracting the answer', () => {
    expect(
      tags('<code>print("\\\\boxed{9}")</code><interpreter>\\boxed{9}</interpreter>no box').answer,
    ).toBeNull();
  });
});

describe('parseResponse survives malformed responses', () => {
  it('1. unclosed code block at the end (a prefix, or a truncated response)', () => {
    const parsed = tags('<think>Let me see <code>\nfor i in range(3):\n  print(i');
    expect(shape(parsed)).toEqual(['reasoning:Let me see', 'code(open):for i in range(3):\n  print(i']);
    expect(parsed.issues).toEqual([{ kind: 'unclosed', at: 18, markup: '<code>' }]);
  });

  it('2. unclosed output block swallows the rest as output', () => {
    const parsed = tags('<code>1</code><interpreter>1\nmore text \\boxed{1}');
    expect(shape(parsed)).toEqual(['code:1', 'tool-output(open):1\nmore text \\boxed{1}']);
    expect(parsed.answer).toBeNull();
  });

  it('3. stray closer outside any block stays in the prose', () => {
    const parsed = tags('<think>so </code> hmm</think>\\boxed{2}');
    expect(shape(parsed)).toEqual(['reasoning:so </code> hmm', 'answer:\\boxed{2}']);
    expect(parsed.issues).toEqual([{ kind: 'stray-closer', at: 10, markup: '</code>' }]);
  });

  it('4. nested opener inside code is code text, reported', () => {
    const parsed = tags('<code>a = "<code>"\nprint(a)</code>');
    expect(shape(parsed)).toEqual(['code:a = "<code>"\nprint(a)']);
    expect(parsed.issues.map((issue) => issue.kind)).toEqual(['nested-opener']);
  });

  it('5. empty code block', () => {
    const parsed = tags('<think>x<code>\n\n</code>y');
    expect(shape(parsed)).toEqual(['reasoning:x', 'code:', 'reasoning:y']);
    expect(parsed.issues.map((issue) => issue.kind)).toEqual(['empty-code']);
  });

  it('6. </think> without <think> (the chat template opened the reasoning)', () => {
    const parsed = tags('reasoning here</think>\nThe answer is \\boxed{7}');
    expect(shape(parsed)).toEqual(['reasoning:reasoning here', 'answer:The answer is \\boxed{7}']);
    expect(parsed.issues).toEqual([]);
  });

  it('7. a second <think> and a second </think> are prose, reported', () => {
    const parsed = tags('<think>a<think>b</think>c</think>d \\boxed{3}');
    expect(shape(parsed)).toEqual(['reasoning:a<think>b', 'answer:c</think>d \\boxed{3}']);
    expect(parsed.issues.map((issue) => issue.kind)).toEqual(['nested-opener', 'stray-closer']);
    expect(parsed.answer).toBe('3');
  });

  it('8. never-closed <think> with a final box: the last prose part is the answer', () => {
    const parsed = tags('<think>work<code>1</code><interpreter>1</interpreter>so \\boxed{1}');
    expect(shape(parsed).at(-1)).toBe('answer:so \\boxed{1}');
    expect(parsed.answer).toBe('1');
  });

  it('9. stray </interpreter> and text after an unclosed box', () => {
    const parsed = tags('</interpreter> \\boxed{5} then \\boxed{6');
    expect(parsed.issues.map((issue) => issue.kind)).toEqual(['stray-closer']);
    expect(parsed.answer).toBe('5');
  });

  it('10. markdown: fence with unknown language left open', () => {
    const parsed = markdown('Consider:\n```latex\nx^2\n');
    expect(shape(parsed)).toEqual(['reasoning:Consider:\n```latex\nx^2']);
    expect(parsed.issues.map((issue) => issue.kind)).toEqual(['unclosed']);
  });

  it('11. markdown: output fence right after code with no newline, and a fence mid-line', () => {
    const parsed = markdown('x ```python\nprint(1)\n```\n');
    expect(shape(parsed)).toEqual(['reasoning:x ```python\nprint(1)\n```']);
    expect(parsed.issues.map((issue) => issue.kind)).toEqual(['unclosed']);
  });

  it('12. markdown: a "```python" line inside code is code text', () => {
    const parsed = markdown('```python\ns = 1\n```python\nprint(s)\n```\n');
    expect(shape(parsed)).toEqual(['code:s = 1\n```python\nprint(s)']);
  });

  it('13. empty text and whitespace only', () => {
    expect(tags('')).toMatchObject({ parts: [], issues: [], answer: null });
    expect(markdown(' \n\n ')).toMatchObject({ parts: [], issues: [], answer: null });
  });

  it('14. markup only, no content', () => {
    const parsed = tags('<think></think><code></code><interpreter></interpreter>');
    expect(shape(parsed)).toEqual(['code:', 'tool-output:']);
  });

  it('15. stays linear on many unclosed openers', () => {
    const text = '<code>'.repeat(20_000);
    expect(tags(text).parts).toHaveLength(1);
    const fences = '```\n'.repeat(20_000);
    expect(markdown(fences).issues).toEqual([]);
  });
});

describe('parseResponse resumes', () => {
  it('re-parsing from resume gives the same remaining parts as a full parse', () => {
    const text =
      '<think>a<code>x=1</code><interpreter>ok</interpreter>b</think>\n\\boxed{1} and <code>print(2)</code> tail';
    const full = tags(text);
    for (let cut = 0; cut <= text.length; cut++) {
      const { resume } = tags(text.slice(0, cut));
      const rest = parseResponse(text, tagsDialect.markup, {
        from: resume.offset,
        reasoning: resume.reasoning,
      });
      const fullRest = full.parts.filter((part) => part.outerStart >= resume.offset);
      expect(rest.parts.map((part) => [part.kind, part.text, part.start])).toEqual(
        fullRest.map((part) => [part.kind, part.text, part.start]),
      );
    }
  });
});

describe('finalAnswer', () => {
  it('reads the last box in prose, never one inside code or interpreter output', () => {
    const code =
      'Check.\n<code>\nprint("\\\\boxed{7}")\n</code>\n<interpreter>\n\\boxed{7}\n</interpreter>\n';
    expect(finalAnswer(code, tagsDialect.markup)).toBeNull();
    expect(finalAnswer(`${code}So \\boxed{8}.`, tagsDialect.markup)).toBe('8');
    expect(finalAnswer('\\boxed{1}\n```python\nx = "\\boxed{2}"\n```\n', markdownDialect.markup)).toBe('1');
  });
});
