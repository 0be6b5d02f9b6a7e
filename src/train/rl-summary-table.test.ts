import { describe, expect, it } from 'vitest';
import type { RlMetrics } from './rl-metrics.ts';
import type { RlReportRun } from './rl-report.ts';
import { pearson, rlSummaryTables } from './rl-summary-table.ts';

function metricsLine(step: number, accuracy: number, codeFrequency: number, tokens: number): RlMetrics {
  return {
    step,
    accuracy,
    codeFrequency,
    responseTokensMean: tokens,
    selfCorrectionRate: step === 3 ? 0.1 : 0,
    groupsKept: 2,
    groupsDropped: 3,
  } as unknown as RlMetrics;
}

function evalRecord(step: number, accuracy: number, codeFrequency: number) {
  return {
    step,
    policyVersion: step + 1,
    accuracy,
    codeFrequency,
    toolCallsPerTrajectory: codeFrequency,
    responseTokensMean: 100,
    byLevel: [
      { level: 0, problems: 10, correct: 2, accuracy: 0.2 },
      { level: 1, problems: 10, correct: 1, accuracy: 0.1 },
    ],
    problems: 20,
    wallMs: 1,
  };
}

const run: RlReportRun = {
  label: 'tool',
  config: null,
  metrics: [
    metricsLine(0, 0.1, 0.1, 100),
    metricsLine(1, 0.2, 0.2, 110),
    metricsLine(2, 0.3, 0.3, 120),
    metricsLine(3, 0.4, 0.4, 130),
  ],
  evals: [evalRecord(1, 0.05, 0.1), evalRecord(3, 0.15, 0.5)],
  tokensByStep: new Map([
    [0, 1000],
    [1, 2000],
    [2, 3000],
    [3, 4000],
  ]),
};

describe('rlSummaryTables', () => {
  it('reports held-out accuracy per evaluation, the step reaching the target, and the rollout halves', () => {
    const text = rlSummaryTables(
      [run, { ...run, label: 'text', evals: [evalRecord(1, 0.02, 0), evalRecord(3, 0.04, 0)] }],
      {
        target: 0.1,
      },
    );
    const lines = text.split('\n');
    expect(lines[0]).toBe(
      '| run | held-out after step 1 | held-out after step 3 | level 0 / 1 at the last | greedy code freq. first → last | first step ≥ 10.0% |',
    );
    expect(lines[2]).toBe('| tool | 5.0% | 15.0% | 20.0% / 10.0% | 10.0% → 50.0% | 3 |');
    expect(lines[3]).toBe('| text | 2.0% | 4.0% | 20.0% / 10.0% | 0.0% → 0.0% | not reached |');
    // Halves: steps 0–1 and 2–3; every series rises linearly with the step (r = 1).
    expect(lines[7]).toBe(
      '| tool | 4 | 15.0% → 35.0% | 15.0% → 35.0% | 105 → 125 | 1.00 / 1.00 / 1.00 | 2.5% (10.0%) | 8 / 12 | 10,000 |',
    );
  });
});

describe('pearson', () => {
  it('is ±1 on a line, null when a side is constant or too short', () => {
    expect(pearson([1, 2, 3], [3, 2, 1])).toBeCloseTo(-1, 12);
    expect(pearson([1, 2, 3], [5, 5, 5])).toBeNull();
    expect(pearson([1, 2], [1, 2])).toBeNull();
  });
});
