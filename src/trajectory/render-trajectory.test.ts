import { describe, expect, it } from 'vitest';
import { markdownDialect } from '../protocol/markdown-dialect.ts';
import { tagsDialect } from '../protocol/tags-dialect.ts';
import { createTrajectoryRenderer, heldBack, renderTrajectory, shouldUseColor } from './render-trajectory.ts';
import type { Trajectory } from './trajectory.ts';
import {
  appendModelSegment,
  appendToolResult,
  createTrajectory,
  finishTrajectory,
} from './trajectory-builder.ts';

const ids = (text: string) => [...Buffer.from(text)];

function fixture(): Trajectory {
  let trajectory = createTrajectory({
    id: 'md-1',
    problemId: 'sum',
    dialect: 'markdown',
    prompt: { text: 'Sum 1..10', tokenIds: ids('Sum 1..10') },
  });
  const first = 'Add them.\n```python\nprint(sum(range(11)))\n```\n';
  trajectory = appendModelSegment(trajectory, {
    text: first,
    tokenIds: ids(first),
    logprobs: null,
    finishReason: 'stop',
    matchedStop: '\n```\n',
    policyVersion: null,
  });
  const closed = markdownDialect.closedCodeAtEnd(first, '\n```\n')!;
  const outcome = { status: 'timeout', stdout: '55\n', limitMs: 3000 } as const;
  const tool = markdownDialect.renderToolResult(outcome, closed);
  trajectory = appendToolResult(trajectory, {
    code: closed.code,
    outcome,
    ms: 3010,
    text: tool,
    tokenIds: ids(tool),
  });
  const last = 'So the sum is \\boxed{55}.';
  trajectory = appendModelSegment(trajectory, {
    text: last,
    tokenIds: ids(last),
    logprobs: null,
    finishReason: 'stop',
    matchedStop: null,
    policyVersion: null,
  });
  return finishTrajectory(trajectory, { reason: 'answer' });
}

function tagsFixture(): Trajectory {
  let trajectory = createTrajectory({
    id: 't',
    problemId: 'p',
    dialect: 'tags',
    prompt: { text: 'q', tokenIds: [113] },
  });
  const first = '<think>Try <b> and </b>.\n<code>\nx = "<"\nprint(x)\n</code>';
  const segment = { logprobs: null, finishReason: 'stop', matchedStop: '</code>', policyVersion: 1 } as const;
  trajectory = appendModelSegment(trajectory, { ...segment, text: first, tokenIds: ids(first) });
  const closed = tagsDialect.closedCodeAtEnd(first, '</code>')!;
  const outcome = { status: 'killed', reason: 'worker crashed' } as const;
  const tool = tagsDialect.renderToolResult(outcome, closed);
  trajectory = appendToolResult(trajectory, {
    code: closed.code,
    outcome,
    ms: 9,
    text: tool,
    tokenIds: ids(tool),
  });
  const last = 'Fine.</think>\nThe answer is \\boxed{<}.';
  trajectory = appendModelSegment(trajectory, {
    ...segment,
    matchedStop: null,
    text: last,
    tokenIds: ids(last),
  });
  return finishTrajectory(trajectory, { reason: 'answer' });
}

function streamed(trajectory: Trajectory, chunkSize: number, color = true): string {
  const dialect = trajectory.dialect === 'tags' ? tagsDialect : markdownDialect;
  const renderer = createTrajectoryRenderer({ dialect, color });
  let out = renderer.header(trajectory);
  for (const segment of trajectory.segments) {
    if (segment.kind === 'model') {
      for (let at = 0; at < segment.text.length; at += chunkSize) {
        out += renderer.text(segment.text.slice(at, at + chunkSize));
      }
    }
    out += renderer.segment(
      segment,
      segment.kind === 'tool' ? trajectory.toolCalls[segment.toolCallIndex] : undefined,
    );
  }
  return out + renderer.footer(trajectory);
}

describe('renderTrajectory', () => {
  it('labels each kind of part, and summarises segments, tool calls and the finish', () => {
    const out = renderTrajectory(fixture(), { color: false });
    expect(out).not.toContain('\u001b[');
    // Markdown has no reasoning wrapper: its prose is labelled text, not think.
    expect(out).toContain('  text │ Add them.');
    expect(out).not.toContain('think │');
    expect(renderTrajectory(tagsFixture(), { color: false })).toContain(' think │ Try <b> and </b>.');
    expect(out).toContain('  code │ print(sum(range(11)))');
    expect(out).toContain('output │ 55');
    expect(out).toContain('output │ TimeoutError: the code ran longer than the 3 s limit and was stopped.');
    expect(out).toContain('answer │ So the sum is \\boxed{55}.');
    expect(out).toContain('#1 model · 46 tokens · mask 1 · finish stop "\\n```\\n"');
    expect(out).toMatch(/#2 tool · \d+ tokens · mask 0 · tool call 0 · timeout after 3.00 s limit · 3.01 s/);
    expect(out).toContain('══ finish: answer · answer: 55');
    expect(out).toContain('1 tool call (1 timeout) · 3 segments');
  });

  it('colours parts when asked', () => {
    const out = renderTrajectory(fixture(), { color: true });
    expect(out).toContain('\u001b[36mprint(sum(range(11)))\u001b[39m');
    expect(out).toContain('\u001b[32m\u001b[1mSo the sum is \\boxed{55}.\u001b[22m\u001b[39m');
  });

  it('streams the same output as a whole render, whatever the chunking', () => {
    const trajectory = tagsFixture();
    const whole = renderTrajectory(trajectory, { color: false });
    const stripAnsi = (text: string) => text.replace(/\u001b\[\d+m/g, '');
    for (const chunkSize of [1, 3, 17]) {
      expect(streamed(trajectory, chunkSize, false)).toBe(whole);
      expect(stripAnsi(streamed(trajectory, chunkSize, true))).toBe(whole);
    }
  });

  it('streams the same text in the markdown dialect (the answer is known only once its box closes)', () => {
    const trajectory = fixture();
    const content = (text: string) => text.replace(/^ *\w+ │ /gm, '').replace(/\n/g, '');
    const whole = renderTrajectory(trajectory, { color: false });
    for (const chunkSize of [1, 5])
      expect(content(streamed(trajectory, chunkSize, false))).toBe(content(whole));
  });

  it('reports format issues of the whole response in the footer', () => {
    let trajectory = createTrajectory({
      id: 'x',
      problemId: null,
      dialect: 'tags',
      prompt: { text: 'p', tokenIds: null },
    });
    trajectory = appendModelSegment(trajectory, {
      text: '<think>hm </code> <code>\nprint(1',
      tokenIds: null,
      logprobs: null,
      finishReason: 'length',
      matchedStop: null,
      policyVersion: null,
    });
    const out = renderTrajectory(finishTrajectory(trajectory, { reason: 'max-tokens' }), { color: false });
    expect(out).toContain('format: stray-closer "</code>" at character 10');
    expect(out).toContain('format: unclosed "<code>" at character 18');
    expect(out).toContain('(text-only)');
  });
});

describe('heldBack', () => {
  it('holds back what could still become a delimiter', () => {
    expect(heldBack('think <co', tagsDialect)).toBe(3);
    expect(heldBack('think </interp', tagsDialect)).toBe(8);
    expect(heldBack('think <b', tagsDialect)).toBe(0);
    expect(heldBack('x\n```pyth', markdownDialect)).toBe(7);
    expect(heldBack('x\n``', markdownDialect)).toBe(2);
    expect(heldBack('x = `a`', markdownDialect)).toBe(0);
  });
});

describe('shouldUseColor', () => {
  it('honours NO_COLOR, FORCE_COLOR and the terminal', () => {
    expect(shouldUseColor({ isTTY: true }, {})).toBe(true);
    expect(shouldUseColor({ isTTY: false }, {})).toBe(false);
    expect(shouldUseColor({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(shouldUseColor({ isTTY: true }, { NO_COLOR: '' })).toBe(true);
    expect(shouldUseColor({ isTTY: false }, { FORCE_COLOR: '1' })).toBe(true);
    expect(shouldUseColor({ isTTY: false }, { FORCE_COLOR: '0' })).toBe(false);
    expect(shouldUseColor({ isTTY: true }, { TERM: 'dumb' })).toBe(false);
  });
});
