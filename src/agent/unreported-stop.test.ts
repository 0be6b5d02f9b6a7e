import { describe, expect, it } from 'vitest';
import type { GenerateResult } from '../engine/types.ts';
import { markdownDialect, tagsDialect } from '../protocol/index.ts';
import { resolveUnreportedStop } from './unreported-stop.ts';

const unreported = (text: string): GenerateResult => ({
  tokenIds: null,
  text,
  logprobs: null,
  finishReason: 'stop',
  matchedStop: null,
  stopIncluded: false,
  stopUnreported: true,
  policyVersion: null,
});

describe('resolveUnreportedStop', () => {
  it('reads a code block left open as closed by the stop string (tags)', () => {
    const result = resolveUnreportedStop('', unreported('<think>\n<code>\nprint(1)\n'), tagsDialect);
    expect(result).toMatchObject({ matchedStop: '</code>', stopIncluded: false, stopUnreported: false });
  });

  it('picks the markdown stop string that closes the open block', () => {
    const result = resolveUnreportedStop('', unreported('Try it.\n```python\nprint(1)'), markdownDialect);
    expect(result.matchedStop).toBe('\n```\n');
  });

  it('joins the turn text: a block opened in an earlier call of the same turn', () => {
    const result = resolveUnreportedStop('<code>\nx = 1\n', unreported('print(x)\n'), tagsDialect);
    expect(result.matchedStop).toBe('</code>');
  });

  it('reads anything else as the end of the answer', () => {
    const answer = unreported('</think>\nThe answer is \\boxed{2717}.');
    expect(resolveUnreportedStop('<think>\n', answer, tagsDialect)).toMatchObject({ matchedStop: null });
    const closedFence = unreported('```text\nnotes');
    expect(resolveUnreportedStop('', closedFence, markdownDialect).matchedStop).toBeNull();
    // A block closed earlier in the turn is not open any more.
    const closedBefore = unreported('\nDone: \\boxed{1}');
    expect(
      resolveUnreportedStop('<code>\nprint(1)\n</code>', closedBefore, tagsDialect).matchedStop,
    ).toBeNull();
  });

  it('leaves results the server reported in full alone', () => {
    const reported: GenerateResult = { ...unreported('<code>\nx\n'), stopUnreported: false };
    expect(resolveUnreportedStop('', reported, tagsDialect)).toBe(reported);
    const length: GenerateResult = { ...unreported('<code>\nx\n'), finishReason: 'length' };
    expect(resolveUnreportedStop('', length, tagsDialect)).toBe(length);
  });
});
