import { describe, expect, it } from 'vitest';
import { fixtureTrajectory } from '../../test/eval-fixtures.ts';
import {
  finishReasonCounts,
  lengthStats,
  percentile,
  responseLength,
  toolUseStats,
} from './tool-use-stats.ts';

describe('toolUseStats', () => {
  it('counts calls, failures and self-corrections', () => {
    const trajectories = [
      fixtureTrajectory({ problemId: 'p', sample: 0, answer: '1', calls: [] }),
      fixtureTrajectory({ problemId: 'p', sample: 1, answer: '1', calls: ['ok', 'ok'] }),
      fixtureTrajectory({ problemId: 'p', sample: 2, answer: '1', calls: ['error', 'ok'] }), // self-corrects
      fixtureTrajectory({ problemId: 'p', sample: 3, answer: '1', calls: ['ok', 'timeout', 'error'] }), // does not
    ];
    expect(toolUseStats(trajectories)).toEqual({
      trajectories: 4,
      codeCalls: 7,
      codeCallsPerTrajectory: 7 / 4,
      codeUsageRate: 3 / 4,
      codeErrorRate: 3 / 7,
      trajectoriesWithError: 2,
      selfCorrected: 1,
      selfCorrectionRate: 1 / 2,
    });
  });

  it('reports no self-correction rate without failures, and zeros for no trajectories', () => {
    expect(
      toolUseStats([fixtureTrajectory({ problemId: 'p', sample: 0, answer: '1' })]).selfCorrectionRate,
    ).toBe(null);
    expect(toolUseStats([])).toMatchObject({ codeCallsPerTrajectory: 0, codeUsageRate: 0, codeErrorRate: 0 });
  });
});

describe('lengths and finish reasons', () => {
  it('uses tokens when every trajectory has ids, characters otherwise', () => {
    const withTokens = fixtureTrajectory({
      problemId: 'p',
      sample: 0,
      answer: '12',
      tokens: true,
      text: 'abcd',
    });
    const textOnly = fixtureTrajectory({ problemId: 'p', sample: 1, answer: '12', text: 'abcdefgh' });
    expect(lengthStats([withTokens])).toEqual({ unit: 'tokens', mean: 4, p50: 4, p90: 4, max: 4 });
    expect(lengthStats([withTokens, textOnly])).toEqual({ unit: 'chars', mean: 6, p50: 4, p90: 8, max: 8 });
    // Tool segments count too: one call adds its model and interpreter text.
    const withCall = fixtureTrajectory({ problemId: 'p', sample: 2, answer: '1', calls: ['ok'], text: 'x' });
    expect(responseLength(withCall, 'chars')).toBe(
      '<code>\nprint(0)\n</code>'.length + '\n<interpreter>\nok\n</interpreter>\n'.length + 1,
    );
  });

  it('takes nearest-rank percentiles and counts finish reasons', () => {
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9)).toBe(9);
    expect(percentile([5], 0.5)).toBe(5);
    const trajectories = [
      fixtureTrajectory({ problemId: 'p', sample: 0, answer: '1' }),
      fixtureTrajectory({ problemId: 'p', sample: 1, answer: null }),
      fixtureTrajectory({ problemId: 'p', sample: 2, answer: null, finish: 'max-tokens' }),
      fixtureTrajectory({ problemId: 'p', sample: 3, answer: '2' }),
    ];
    expect(finishReasonCounts(trajectories)).toEqual({ answer: 2, 'no-answer': 1, 'max-tokens': 1 });
  });
});
