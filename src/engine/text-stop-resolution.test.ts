import { describe, expect, it } from 'vitest';
import { resolveTextStop } from './text-stop-resolution.ts';

describe('resolveTextStop', () => {
  const base = { finishReason: 'stop' as const, text: 'print(1)\n', requestedStops: ['</code>'] };

  it('trusts a reported stop string', () => {
    expect(resolveTextStop({ ...base, requestedStops: ['a', 'b'], reportedStop: 'b' })).toEqual({
      matchedStop: 'b',
      stopIncluded: false,
    });
  });

  it('treats a reported null or token id as EOS', () => {
    expect(resolveTextStop({ ...base, reportedStop: null }).matchedStop).toBeNull();
    expect(resolveTextStop({ ...base, reportedStop: 151645 }).matchedStop).toBeNull();
  });

  it('infers the only requested stop when the server reports nothing', () => {
    expect(resolveTextStop({ ...base, reportedStop: undefined })).toEqual({
      matchedStop: '</code>',
      stopIncluded: false,
    });
  });

  it('detects an untrimmed stop at the end of the text', () => {
    const result = resolveTextStop({
      ...base,
      text: 'x</code>',
      requestedStops: ['```', '</code>'],
      reportedStop: undefined,
    });
    expect(result).toEqual({ matchedStop: '</code>', stopIncluded: true });
  });

  it('gives up (null) with several stops and no report, and for length finishes', () => {
    expect(
      resolveTextStop({ ...base, requestedStops: ['a', 'b'], reportedStop: undefined }).matchedStop,
    ).toBeNull();
    expect(
      resolveTextStop({ ...base, finishReason: 'length', reportedStop: '</code>' }).matchedStop,
    ).toBeNull();
  });
});
