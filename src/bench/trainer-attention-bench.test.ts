import { describe, expect, it } from 'vitest';
import {
  DENSE_BYTES_PER_PAIR,
  renderTrainerAttentionBench,
  runTrainerAttentionBench,
} from './trainer-attention-bench.ts';
import type { ProbeRequest, ProbeRun } from './trainer-memory-bench.ts';

/** A probe whose dense path grows with T² and whose varlen path with T²/N. */
function scriptedProbe(requests: ProbeRequest[]) {
  return async (request: ProbeRequest): Promise<ProbeRun> => {
    requests.push(request);
    const sequences = request.sequences ?? 1;
    const pairs = request.attention === 'sdpa' ? request.tokens ** 2 : request.tokens ** 2 / sequences;
    return {
      tokens: request.tokens,
      logitsChunkTokens: request.logitsChunkTokens,
      sequences,
      attention: request.attention ?? 'varlen',
      status: 'ok',
      baselineMemoryBytes: 800e6,
      peakMemoryBytes: 900e6 + 10 * pairs,
      stepSeconds: [request.attention === 'sdpa' ? 8 : 1],
    };
  };
}

describe('trainer attention bench', () => {
  it('runs the varlen and the sdpa path on the same packed row, each in its own probe', async () => {
    const requests: ProbeRequest[] = [];
    const report = await runTrainerAttentionBench({
      tokens: 16_384,
      sequences: 8,
      availableBytes: 16 * 2 ** 30,
      probe: scriptedProbe(requests),
    });
    expect(
      requests.map((request) => [request.attention, request.tokens, request.sequences, request.vocabSize]),
    ).toEqual([
      ['varlen', 16_384, 8, 1024],
      ['sdpa', 16_384, 8, 1024],
    ]);
    expect(report.paths.map((path) => path.how)).toEqual(['measured', 'measured']);
    const table = renderTrainerAttentionBench(report);
    expect(table).toContain('8 sequences packed in one 16384-token row');
    expect(table).toMatch(/sdpa, dense \[T × T\] mask .*measured \(ok\)/);
    // Above the start: (100e6 + 10·T²) / (100e6 + 10·T²/8), and 8 s against 1 s.
    const ratio = (100e6 + 10 * 16_384 ** 2) / (100e6 + (10 * 16_384 ** 2) / 8);
    expect(table).toContain(`${ratio.toFixed(1)}x memory, 8.0x time`);
  });

  it('does not run the dense path where its estimate exceeds half the available memory', async () => {
    const requests: ProbeRequest[] = [];
    const tokens = 98_304;
    const report = await runTrainerAttentionBench({
      tokens,
      sequences: 16,
      availableBytes: 16 * 2 ** 30,
      probe: scriptedProbe(requests),
    });
    expect(requests.map((request) => request.attention)).toEqual(['varlen']);
    expect(report.paths[1]).toEqual({
      attention: 'sdpa',
      how: 'not-run',
      estimatedPeakBytes: DENSE_BYTES_PER_PAIR * tokens * tokens,
    });
    expect(renderTrainerAttentionBench(report)).toContain('not run: estimated');
  });

  it('refuses a row too short for its sequences', async () => {
    await expect(
      runTrainerAttentionBench({ tokens: 7, sequences: 4, probe: scriptedProbe([]) }),
    ).rejects.toThrow(/7 tokens cannot hold 4 sequences/);
  });
});
