import { describe, expect, it } from 'vitest';
import {
  assertSameRun,
  canonicalJson,
  diffIdentity,
  identityHash,
  RUN_IDENTITY_MISMATCH,
  RunIdentityMismatchError,
} from './run-identity.ts';

describe('run identity', () => {
  const saved = { benchmark: 'aime24', k: 4, sampling: { temperature: 0.6, topP: 0.95 }, limit: null };

  it('is canonical: key order does not matter, the hash is stable', () => {
    const reordered = { limit: null, sampling: { topP: 0.95, temperature: 0.6 }, k: 4, benchmark: 'aime24' };
    expect(canonicalJson(reordered)).toBe(canonicalJson(saved));
    expect(identityHash(reordered)).toBe(identityHash(saved));
    expect(identityHash(saved)).toMatch(/^[0-9a-f]{16}$/);
    expect(identityHash({ ...saved, k: 5 })).not.toBe(identityHash(saved));
  });

  it('lists every differing field by dotted path with both values', () => {
    const current = {
      benchmark: 'aime24',
      k: 2,
      sampling: { temperature: 1, topP: 0.95 },
      limit: 3,
      extra: true,
    };
    expect(diffIdentity(saved, current)).toEqual([
      { field: 'extra', saved: undefined, current: true },
      { field: 'k', saved: 4, current: 2 },
      { field: 'limit', saved: null, current: 3 },
      { field: 'sampling.temperature', saved: 0.6, current: 1 },
    ]);
  });

  it('refuses with a message naming each field and how to start afresh', () => {
    expect(() =>
      assertSameRun({ run: 'runs/a', saved, current: saved, fresh: 'pass another --out' }),
    ).not.toThrow();
    let error: unknown;
    try {
      assertSameRun({ run: 'runs/a', saved, current: { ...saved, k: 2 }, fresh: 'pass another --out' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RunIdentityMismatchError);
    expect((error as RunIdentityMismatchError).code).toBe(RUN_IDENTITY_MISMATCH);
    expect((error as Error).message).toContain('k: saved 4, now 2');
    expect((error as Error).message).toContain('pass another --out');
  });
});
