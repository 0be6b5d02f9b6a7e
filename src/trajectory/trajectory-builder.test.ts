import { describe, expect, it } from 'vitest';
import { tagsDialect } from '../protocol/tags-dialect.ts';
import { responseTokens } from '../trajectory/loss-mask.ts';
import { trajectorySchema } from '../trajectory/trajectory.ts';
import {
  appendModelSegment,
  appendToolResult,
  createTrajectory,
  finishTrajectory,
  isTextOnly,
  responseText,
} from './trajectory-builder.ts';

const bytes = (text: string) => [...Buffer.from(text, 'utf8')];
const clock = () => new Date('2025-01-02T03:04:05.000Z');

function solve(tokenLevel: boolean) {
  const ids = (text: string) => (tokenLevel ? bytes(text) : null);
  const first = '<think>Square 12.\n<code>\nprint(12**2)\n</code>';
  let trajectory = createTrajectory({
    id: 't1',
    problemId: 'p1',
    dialect: 'tags',
    prompt: { text: '<|user|>\nSquare 12\n', tokenIds: ids('<|user|>\nSquare 12\n') },
    now: clock,
  });
  trajectory = appendModelSegment(
    trajectory,
    {
      text: first,
      tokenIds: ids(first),
      logprobs: tokenLevel ? bytes(first).map(() => -0.5) : null,
      finishReason: 'stop',
      matchedStop: '</code>',
      policyVersion: 3,
    },
    40,
  );
  const closed = tagsDialect.closedCodeAtEnd(first, '</code>')!;
  const outcome = { status: 'ok', stdout: '144\n', stderr: '', ms: 2 } as const;
  const toolText = tagsDialect.renderToolResult(outcome, closed);
  trajectory = appendToolResult(trajectory, {
    code: closed.code,
    outcome,
    ms: 5,
    text: toolText,
    tokenIds: ids(toolText),
  });
  const last = 'So 144.</think>\nThe answer is \\boxed{144}.';
  trajectory = appendModelSegment(
    trajectory,
    {
      text: last,
      tokenIds: ids(last),
      logprobs: null,
      finishReason: 'stop',
      matchedStop: null,
      policyVersion: 3,
    },
    20,
  );
  return {
    trajectory: finishTrajectory(trajectory, { reason: 'answer', now: clock }),
    first,
    toolText,
    last,
  };
}

describe('trajectory builder', () => {
  it('builds a valid token-level trajectory with the loss mask over tool tokens', () => {
    const { trajectory, first, toolText, last } = solve(true);
    expect(trajectorySchema.parse(trajectory)).toEqual(trajectory);
    expect(trajectory.answer).toBe('144');
    expect(trajectory.finish).toEqual({ reason: 'answer' });
    expect(trajectory.toolCalls).toEqual([
      { code: 'print(12**2)', outcome: { status: 'ok', stdout: '144\n', stderr: '', ms: 2 }, ms: 5 },
    ]);
    expect(trajectory.timing).toEqual({
      startedAt: '2025-01-02T03:04:05.000Z',
      finishedAt: '2025-01-02T03:04:05.000Z',
      engineMs: 60,
      toolMs: 5,
    });
    expect(responseText(trajectory)).toBe(first + toolText + last);
    const view = responseTokens(trajectory)!;
    expect(view.tokenIds).toEqual(bytes(first + toolText + last));
    expect(view.lossMask).toEqual([
      ...bytes(first).map(() => 1),
      ...bytes(toolText).map(() => 0),
      ...bytes(last).map(() => 1),
    ]);
    expect(view.logprobs.slice(0, 2)).toEqual([-0.5, -0.5]);
    expect(view.logprobs[bytes(first).length]).toBe(0);
  });

  it('builds a valid text-only trajectory, for which responseTokens is null', () => {
    const { trajectory } = solve(false);
    expect(isTextOnly(trajectory)).toBe(true);
    expect(trajectorySchema.safeParse(trajectory).success).toBe(true);
    expect(responseTokens(trajectory)).toBeNull();
    expect(trajectory.segments.every((segment) => segment.tokenIds === null)).toBe(true);
  });

  it('leaves its input untouched', () => {
    const empty = createTrajectory({
      id: 'a',
      problemId: null,
      dialect: 'markdown',
      prompt: { text: 'p', tokenIds: null },
    });
    const grown = appendModelSegment(empty, {
      text: 'x',
      tokenIds: null,
      logprobs: null,
      finishReason: 'length',
      matchedStop: null,
      policyVersion: null,
    });
    expect(empty.segments).toEqual([]);
    expect(grown.segments).toHaveLength(1);
  });

  it('refuses mixed token modes, mismatched logprobs and growth after finish', () => {
    const textOnly = createTrajectory({
      id: 'a',
      problemId: null,
      dialect: 'tags',
      prompt: { text: 'p', tokenIds: null },
    });
    const segment = {
      text: 'x',
      logprobs: null,
      finishReason: 'stop',
      matchedStop: null,
      policyVersion: null,
    } as const;
    expect(() => appendModelSegment(textOnly, { ...segment, tokenIds: [120] })).toThrow(/text-only/);
    const tokens = createTrajectory({
      id: 'b',
      problemId: null,
      dialect: 'tags',
      prompt: { text: 'p', tokenIds: [112] },
    });
    expect(() => appendModelSegment(tokens, { ...segment, tokenIds: null })).toThrow(/has token ids/);
    expect(() => appendModelSegment(tokens, { ...segment, tokenIds: [120], logprobs: [-1, -2] })).toThrow(
      /2 logprobs for 1 tokens/,
    );
    const done = finishTrajectory(tokens, { reason: 'no-answer' });
    expect(done.answer).toBeNull();
    expect(() => finishTrajectory(done, { reason: 'answer' })).toThrow(
      expect.objectContaining({ code: 'TRAJECTORY_FINISHED' }),
    );
  });

  it('the schema rejects records that break the invariants', () => {
    const { trajectory } = solve(true);
    const mixed = structuredClone(trajectory);
    mixed.segments[1]!.tokenIds = null;
    expect(trajectorySchema.safeParse(mixed).error?.issues[0]).toMatchObject({
      path: ['segments', 1, 'tokenIds'],
    });
    const badIndex = structuredClone(trajectory);
    (badIndex.segments[1] as { toolCallIndex: number }).toolCallIndex = 4;
    expect(trajectorySchema.safeParse(badIndex).error?.issues[0]?.message).toMatch(/below 1/);
  });
});
