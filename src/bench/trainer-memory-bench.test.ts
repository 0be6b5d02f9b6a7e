import { describe, expect, it } from 'vitest';
import {
  extrapolatePeak,
  fullLogitsFits,
  type ProbeRequest,
  type ProbeRun,
  renderTrainerMemoryBench,
  runTrainerMemoryBench,
} from './trainer-memory-bench.ts';

/** A probe whose peak grows linearly with the [T × V] elements the full-logits path holds. */
function scriptedProbe(requests: ProbeRequest[]) {
  return async (request: ProbeRequest): Promise<ProbeRun> => {
    requests.push(request);
    const perElement = request.logitsChunkTokens === 0 ? 20 : 0;
    return {
      tokens: request.tokens,
      logitsChunkTokens: request.logitsChunkTokens,
      status: 'ok',
      baselineMemoryBytes: 900e6,
      peakMemoryBytes: 1e9 + perElement * request.vocabSize * request.tokens,
      stepSeconds: [1.5],
    };
  };
}

describe('trainer memory bench', () => {
  it('extrapolates on the line through two measured lengths', () => {
    expect(
      extrapolatePeak({ tokens: 512, peakMemoryBytes: 2e9 }, { tokens: 1024, peakMemoryBytes: 3e9 }, 8192),
    ).toBe(17e9);
    expect(() =>
      extrapolatePeak({ tokens: 8, peakMemoryBytes: 1 }, { tokens: 8, peakMemoryBytes: 2 }, 16),
    ).toThrow(/two different lengths/);
  });

  it('measures the full-logits path at the full length only when it fits in half the memory', () => {
    expect(fullLogitsFits(151_936, 8192, 64 * 2 ** 30)).toBe(true);
    expect(fullLogitsFits(151_936, 8192, 20 * 2 ** 30)).toBe(false);
  });

  it('runs the chunked path at full length and extrapolates the full-logits path where it cannot fit', async () => {
    const requests: ProbeRequest[] = [];
    const report = await runTrainerMemoryBench({
      vocabSize: 151_936,
      tokens: 8192,
      availableBytes: 16 * 2 ** 30,
      probe: scriptedProbe(requests),
    });
    expect(requests.map((request) => [request.tokens, request.logitsChunkTokens])).toEqual([
      [8192, 512],
      [512, 0],
      [1024, 0],
    ]);
    expect(report.fullLogits.how).toBe('extrapolated');
    expect(report.fullLogits.peakMemoryBytes).toBe(1e9 + 20 * 151_936 * 8192);
    const table = renderTrainerMemoryBench(report);
    expect(table).toContain('chunked (512 tokens a chunk)');
    expect(table).toContain('extrapolated from 512 tokens');
  });

  it('measures both paths at the full length where memory allows', async () => {
    const requests: ProbeRequest[] = [];
    const report = await runTrainerMemoryBench({
      vocabSize: 1000,
      tokens: 256,
      logitsChunkTokens: 64,
      availableBytes: 16 * 2 ** 30,
      probe: scriptedProbe(requests),
    });
    expect(requests.map((request) => [request.tokens, request.logitsChunkTokens])).toEqual([
      [256, 64],
      [256, 0],
    ]);
    expect(report.fullLogits.how).toBe('measured');
    expect(renderTrainerMemoryBench(report)).toMatch(/full \[T × V\] logits .*measured \(ok\)/);
  });
});
