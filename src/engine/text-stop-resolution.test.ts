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
    expect(resolveTextStop({ ...base, reportedStop: null })).toEqual({
      matchedStop: null,
      stopIncluded: false,
    });
    expect(resolveTextStop({ ...base, reportedStop: 151645 }).matchedStop).toBeNull();
  });

  it('does not guess when the server reports nothing, even with one requested stop', () => {
    expect(resolveTextStop({ ...base, reportedStop: undefined })).toEqual({
      matchedStop: null,
      stopIncluded: false,
      stopUnreported: true,
    });
    expect(
      resolveTextStop({ ...base, requestedStops: ['a', 'b'], reportedStop: undefined }).stopUnreported,
    ).toBe(true);
  });

  it('is EOS, not unreported, when no stop string was requested', () => {
    expect(resolveTextStop({ ...base, requestedStops: [], reportedStop: undefined })).toEqual({
      matchedStop: null,
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

  it('has no stop for length and abort finishes', () => {
    expect(resolveTextStop({ ...base, finishReason: 'length', reportedStop: '</code>' })).toEqual({
      matchedStop: null,
      stopIncluded: false,
    });
    expect(resolveTextStop({ ...base, finishReason: 'abort', reportedStop: undefined }).stopUnreported).toBe(
      undefined,
    );
  });
});
