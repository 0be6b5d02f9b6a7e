import { describe, expect, it } from 'vitest';
import type { ExecutionOutcome } from '../shared/execution-outcome.ts';
import { dialects, getDialect, UnknownDialectError } from './dialects.ts';
import { markdownDialect } from './markdown-dialect.ts';
import { parseResponse } from './response-parser.ts';
import { tagsDialect } from './tags-dialect.ts';

const ok = (stdout: string): ExecutionOutcome => ({ status: 'ok', stdout, stderr: '', ms: 3 });

describe('dialect registry', () => {
  it('looks dialects up by name and names the known ones on a miss', () => {
    expect(getDialect('tags')).toBe(tagsDialect);
    expect(getDialect('markdown')).toBe(markdownDialect);
    expect(Object.keys(dialects).sort()).toEqual(['markdown', 'tags']);
    expect(() => getDialect('toString')).toThrow(UnknownDialectError);
    expect(() => getDialect('xml')).toThrow(/unknown dialect "xml"; known dialects: tags, markdown/);
  });
});

describe('tags dialect', () => {
  const text = '<think>Let me compute.\n<code>\nx = 2\nprint(x ** 10)\n</code>';

  it('stops on </code>', () => {
    expect(tagsDialect.stopStrings).toEqual(['</code>']);
  });

  it('finds the closed block with the stop string kept', () => {
    expect(tagsDialect.closedCodeAtEnd(text, '</code>')).toEqual({
      code: 'x = 2\nprint(x ** 10)',
      stopTrimmed: false,
      outputOpening: '\n<interpreter>\n',
    });
  });

  it('finds the closed block when the engine trimmed the stop string, and restores it', () => {
    const trimmed = text.slice(0, -'</code>'.length);
    const closed = tagsDialect.closedCodeAtEnd(trimmed, '</code>');
    expect(closed).toEqual({
      code: 'x = 2\nprint(x ** 10)',
      stopTrimmed: true,
      outputOpening: '</code>\n<interpreter>\n',
    });
    const continued = trimmed + tagsDialect.renderToolResult(ok('1024\n'), closed!);
    expect(continued).toBe(`${text}\n<interpreter>\n1024\n</interpreter>\n`);
  });

  it('recognises a closed block without a reported stop (EOS right after it)', () => {
    expect(tagsDialect.closedCodeAtEnd(text, null)?.code).toBe('x = 2\nprint(x ** 10)');
  });

  it('does not fire when prose follows the last closed block', () => {
    expect(tagsDialect.closedCodeAtEnd(`${text}\nSo it is big.`, null)).toBeNull();
    expect(tagsDialect.closedCodeAtEnd(`${text}</think>`, null)).toBeNull();
  });

  it('does not fire for an unclosed block without a stop, or for a stop with no open block', () => {
    expect(tagsDialect.closedCodeAtEnd('<think><code>\nprint(1)\n', null)).toBeNull();
    expect(tagsDialect.closedCodeAtEnd('<think>no code here', '</code>')).toBeNull();
    expect(tagsDialect.closedCodeAtEnd('<code>a</code> then </code>', '</code>')).toBeNull();
  });

  it('ignores a reported stop string that is not one of its own', () => {
    expect(tagsDialect.closedCodeAtEnd('<code>\nprint(1)\n', '<|endoftext|>')).toBeNull();
  });

  it('unwraps a markdown fence written inside <code>', () => {
    expect(tagsDialect.closedCodeAtEnd('<code>\n```python\nprint(3)\n```\n</code>', '</code>')?.code).toBe(
      'print(3)',
    );
  });

  it('returns empty code for an empty block (still a closed block the loop must answer)', () => {
    expect(tagsDialect.closedCodeAtEnd('<think><code>\n</code>', '</code>')?.code).toBe('');
  });

  it('renders a tool result from stopTrimmed alone', () => {
    expect(tagsDialect.renderToolResult(ok('5\n'))).toBe('\n<interpreter>\n5\n</interpreter>\n');
    expect(tagsDialect.renderToolResult(ok('5\n'), { stopTrimmed: true })).toBe(
      '</code>\n<interpreter>\n5\n</interpreter>\n',
    );
  });
});

describe('markdown dialect', () => {
  const text = 'We compute.\n```python\nprint(sum(range(10)))\n```\n';

  it('stops after the closing fence, and on a model-written output fence', () => {
    expect(markdownDialect.stopStrings).toEqual(['\n```\n', '```output']);
    // The opening fence never contains the first stop string.
    expect('```python\n'.includes(markdownDialect.stopStrings[0]!)).toBe(false);
  });

  it('finds the closed block with the stop string kept', () => {
    expect(markdownDialect.closedCodeAtEnd(text, '\n```\n')).toEqual({
      code: 'print(sum(range(10)))',
      stopTrimmed: false,
      outputOpening: '```output\n',
    });
  });

  it('finds the closed block when the engine trimmed the stop string, and restores it', () => {
    const trimmed = text.slice(0, -'\n```\n'.length);
    const closed = markdownDialect.closedCodeAtEnd(trimmed, '\n```\n');
    expect(closed).toMatchObject({ code: 'print(sum(range(10)))', stopTrimmed: true });
    expect(trimmed + markdownDialect.renderToolResult(ok('45\n'), closed!)).toBe(
      `${text}\`\`\`output\n45\n\`\`\`\n`,
    );
  });

  it('handles a model that writes the output fence itself, trimmed or not', () => {
    const kept = markdownDialect.closedCodeAtEnd(`${text}\`\`\`output`, '```output');
    expect(kept).toEqual({ code: 'print(sum(range(10)))', stopTrimmed: false, outputOpening: '\n' });
    expect(`${text}\`\`\`output${markdownDialect.renderToolResult(ok('45'), kept!)}`).toBe(
      `${text}\`\`\`output\n45\n\`\`\`\n`,
    );
    const trimmed = markdownDialect.closedCodeAtEnd(text, '```output');
    expect(trimmed).toEqual({
      code: 'print(sum(range(10)))',
      stopTrimmed: true,
      outputOpening: '```output\n',
    });
  });

  it('recognises a closing fence at the very end (EOS, no newline)', () => {
    const closed = markdownDialect.closedCodeAtEnd(text.trimEnd(), null);
    expect(closed).toEqual({
      code: 'print(sum(range(10)))',
      stopTrimmed: false,
      outputOpening: '\n```output\n',
    });
  });

  it('fires only when the LAST block is closed at the end', () => {
    // An earlier closed block followed by prose.
    expect(markdownDialect.closedCodeAtEnd(`${text}So the sum is 45.\n`, null)).toBeNull();
    // An earlier closed block, prose, then a bare fence that opens a plain block.
    expect(markdownDialect.closedCodeAtEnd(`${text}A table:\n\`\`\`\n`, '\n```\n')).toBeNull();
    // The last block closed is an output block, not code.
    expect(markdownDialect.closedCodeAtEnd(`${text}\`\`\`output\n45\n\`\`\`\n`, '\n```\n')).toBeNull();
    // Code still open (the fence inside a string does not close it).
    expect(markdownDialect.closedCodeAtEnd('```python\nprint("```")\n', null)).toBeNull();
  });

  it('renders a tool result from stopTrimmed alone', () => {
    expect(markdownDialect.renderToolResult(ok('7'))).toBe('```output\n7\n```\n');
    expect(markdownDialect.renderToolResult(ok('7'), { stopTrimmed: true })).toBe(
      '\n```\n```output\n7\n```\n',
    );
  });
});

describe('a full exchange parses back into its parts in both dialects', () => {
  it.each([tagsDialect, markdownDialect])('$name', (dialect) => {
    const opening =
      dialect.name === 'tags'
        ? '<think>Compute it.\n<code>\nprint(6*7)\n</code>'
        : 'Compute it.\n```python\nprint(6*7)\n```\n';
    const closed = dialect.closedCodeAtEnd(opening, dialect.stopStrings[0]!);
    expect(closed?.code).toBe('print(6*7)');
    const ending =
      dialect.name === 'tags'
        ? 'So 42.</think>\nThe answer is \\boxed{42}.'
        : 'So the answer is \\boxed{42}.';
    const full = opening + dialect.renderToolResult(ok('42\n'), closed!) + ending;
    const parsed = parseResponse(full, dialect.markup);
    expect(parsed.parts.map((part) => part.kind)).toEqual([
      'reasoning',
      'code',
      'tool-output',
      ...(dialect.name === 'tags' ? ['reasoning'] : []),
      'answer',
    ]);
    expect(parsed.parts[2]?.text.trim()).toBe('42');
    expect(parsed.answer).toBe('42');
    expect(parsed.issues).toEqual([]);
  });
});
