import { describe, expect, it } from 'vitest';
import { summarizeLatency } from './latency-summary.ts';

describe('summarizeLatency', () => {
  it('takes nearest-rank percentiles', () => {
    const samples = Array.from({ length: 100 }, (_, index) => 100 - index);
    expect(summarizeLatency(samples)).toEqual({ count: 100, p50Ms: 50, p99Ms: 99, meanMs: 50.5 });
    expect(summarizeLatency([3])).toMatchObject({ p50Ms: 3, p99Ms: 3 });
    expect(summarizeLatency([])).toMatchObject({ count: 0 });
  });
});
