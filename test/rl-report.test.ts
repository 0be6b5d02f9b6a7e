/**
 * The RL report from run folders: curves for accuracy (rollout and held-out), code frequency,
 * length, reward, entropy and self-correction against the step, with a gap where a value is
 * missing; two runs share every chart; `agentmath report` picks the RL page for an RL folder and
 * refuses to put an RL run beside an eval run.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineChart, roundStep } from '../src/eval/svg-line-chart.ts';
import { type RlEvalRecord, type RlMetrics, readRlRun, renderRlReport } from '../src/train/index.ts';
import { killAllClis, startCli } from './cli-process.ts';

let root: string;

function metricsLine(step: number, shift: number): RlMetrics {
  return {
    step,
    policyVersion: step + 1,
    rewardMean: 0.5 + 0.05 * step + shift,
    accuracy: Math.min(1, 0.4 + 0.05 * step + shift),
    codeFrequency: 0.05 + 0.1 * step,
    codeCallsPerTrajectory: 0.1 * step,
    responseTokensMean: 120 + 10 * step,
    truncationRate: 0,
    selfCorrectionRate: step === 2 ? null : 0.1 * step,
    groupsKept: 4,
    groupsDropped: 1,
    clipFraction: 0.01,
    approxKl: 0.001,
    entropy: 0.6 - 0.05 * step,
    gradNorm: 0.3,
    offPolicyWeight: null,
    offPolicyCapped: null,
    rolloutLogprobGap: null,
    staleLogprobGap: null,
    klRef: null,
    updates: 1,
    rolloutMs: 30_000,
    trainMs: 3_000,
    weightSyncMs: 0,
    engineIdleMs: 3_000,
    trainerIdleMs: 30_000,
    stalenessMax: 1,
    stalenessMean: 0.5,
    stalenessHistogram: { '0': 100, '1': 100 },
    stage: 0,
    tokensSampled: 4000,
    tokensPerKeptGroup: 1000,
    problemsSkipped: 0,
  };
}

function writeRun(folder: string, shift: number, steps: number): void {
  mkdirSync(folder, { recursive: true });
  writeFileSync(
    join(folder, 'metrics.jsonl'),
    Array.from({ length: steps }, (_, step) => `${JSON.stringify(metricsLine(step, shift))}\n`).join(''),
  );
  const evals: RlEvalRecord[] = [0, steps].map((step) => ({
    step,
    policyVersion: step,
    accuracy: 0.5 + step * 0.02 + shift,
    codeFrequency: 0.04 + step * 0.05,
    toolCallsPerTrajectory: 0.1,
    responseTokensMean: 130,
    byLevel: [{ level: 1, problems: 10, correct: 6, accuracy: 0.6 }],
    problems: 10,
    wallMs: 5_000,
  }));
  writeFileSync(join(folder, 'evals.jsonl'), evals.map((record) => `${JSON.stringify(record)}\n`).join(''));
  writeFileSync(
    join(folder, 'steps.jsonl'),
    Array.from({ length: steps }, (_, step) => `${JSON.stringify({ step, tokensGenerated: 6_000 })}\n`).join(
      '',
    ),
  );
  writeFileSync(join(folder, 'config.json'), JSON.stringify({ command: 'train rl', textOnly: shift > 0 }));
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'agentmath-rl-report-'));
  writeRun(join(root, 'tool'), 0, 5);
  writeRun(join(root, 'text'), 0.1, 5);
  mkdirSync(join(root, 'eval-run'));
  writeFileSync(join(root, 'eval-run', 'config.json'), '{}');
  writeFileSync(join(root, 'eval-run', 'trajectories.jsonl'), '');
});
afterAll(() => {
  killAllClis();
  rmSync(root, { recursive: true, force: true });
});

describe('lineChart', () => {
  it('rounds fractional ticks and splits a line where a value is missing', () => {
    expect(roundStep(0.23)).toBe(0.5);
    expect(roundStep(0.07)).toBeCloseTo(0.1, 12);
    expect(roundStep(130)).toBe(200);
    const svg = lineChart({
      title: 't',
      series: [
        {
          name: 'a',
          points: [
            { x: 1, y: 0.1 },
            { x: 2, y: 0.2 },
            { x: 3, y: null },
            { x: 4, y: 0.4 },
            { x: 5, y: 0.5 },
          ],
        },
      ],
    });
    expect(svg.match(/<polyline/g)).toHaveLength(2);
    expect(svg.match(/<circle/g)).toHaveLength(4);
    expect(svg).toContain('a · 4: 0.4');
  });
});

describe('RL report', () => {
  it('draws every curve of one run, with the summary and the held-out table', async () => {
    const html = renderRlReport([await readRlRun(join(root, 'tool'))]);
    for (const title of [
      'Accuracy',
      'Code frequency',
      'Response length',
      'Reward',
      'Entropy',
      'Self-correction',
    ]) {
      expect(html).toContain(title);
    }
    expect(html.match(/<svg/g)).toHaveLength(6);
    // 5 steps × 33 s = 2.75 min; 30,000 tokens over 150 s of rollout = 200 tokens/s.
    expect(html).toContain('<td>2.8 min</td><td>200</td>');
    expect(html).toContain('50.0% → 60.0%');
    expect(html).toContain('held-out (greedy) · 5: 60%');
  });

  it('puts two runs on the same charts, and marks configuration fields that differ', async () => {
    const html = renderRlReport([await readRlRun(join(root, 'tool')), await readRlRun(join(root, 'text'))]);
    expect(html).toContain('RL runs: tool vs text');
    expect(html).toContain('tool held-out (greedy)');
    expect(html).toContain('text rollout (sampled)');
    expect(html).toMatch(/<tr class="bad"><td class="name">textOnly<\/td>/);
  });

  it('agentmath report writes the RL page, and refuses an RL run beside an eval run', async () => {
    const out = join(root, 'compare.html');
    const made = await startCli(
      ['report', join(root, 'tool'), '--compare', join(root, 'text'), '--out', out],
      {
        cwd: root,
      },
    ).done;
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout.trim()).toBe(out);
    expect(readFileSync(out, 'utf8')).toContain('RL runs: tool vs text');
    const refused = await startCli(['report', join(root, 'tool'), '--compare', join(root, 'eval-run')], {
      cwd: root,
    }).done;
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('is not a train rl run');
  }, 60_000);
});
