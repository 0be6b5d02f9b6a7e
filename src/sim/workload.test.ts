import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mean } from './distribution.ts';
import { BUILTIN_WORKLOADS, loadWorkload, parseWorkload } from './workload.ts';
import { workloadPlans } from './workload-plans.ts';

describe('workloads', () => {
  it('loads every built-in workload', () => {
    for (const name of BUILTIN_WORKLOADS) expect(loadWorkload(name).name).toBe(name);
  });

  it('paper: 64 × 8, response mean near 16.9k and at most 96k, tool calls near 8.3, latency near 1.2 s', () => {
    const paper = loadWorkload('paper');
    expect(paper.stepPrompts * paper.groupSize).toBe(512);
    expect(mean(paper.responseTokens)).toBeGreaterThan(16_000);
    expect(mean(paper.responseTokens)).toBeLessThan(17_800);
    expect(mean(paper.toolLatencyMs)).toBeGreaterThan(1100);
    expect(mean(paper.toolLatencyMs)).toBeLessThan(1300);
    const plans = workloadPlans(paper);
    let calls = 0;
    let longest = 0;
    for (let problem = 0; problem < 64; problem++) {
      for (let sample = 0; sample < 8; sample++) {
        const plan = plans.planFor(problem, sample);
        calls += plan.toolCalls.length;
        longest = Math.max(longest, plan.responseTokens);
      }
    }
    expect(calls / 512).toBeGreaterThan(7);
    expect(calls / 512).toBeLessThan(9.6);
    expect(longest).toBeLessThanOrEqual(96_000);
  });

  it('draws the same plan for the same problem and sample, whatever was drawn before', () => {
    const plans = workloadPlans(loadWorkload('paper'));
    const first = plans.planFor(3, 5);
    plans.planFor(9, 1);
    expect(plans.planFor(3, 5)).toEqual(first);
    expect(plans.planFor(3, 6)).not.toEqual(first);
  });

  it('names the file and the field of an invalid workload', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-workload-'));
    const path = join(dir, 'bad.json');
    const paper = JSON.parse(JSON.stringify(loadWorkload('paper')));
    paper.costModel.decodeBaseMs = -1;
    writeFileSync(path, JSON.stringify(paper));
    expect(() => loadWorkload(path)).toThrow(`workload ${path}: field "costModel.decodeBaseMs"`);
    writeFileSync(
      path,
      JSON.stringify({ ...paper, costModel: loadWorkload('paper').costModel, replicaz: 3 }),
    );
    expect(() => loadWorkload(path)).toThrow('replicaz');
    expect(() => loadWorkload(join(dir, 'missing.json'))).toThrow('not a built-in workload');
  });
});

describe('problem difficulty', () => {
  const base = loadWorkload('paper');
  const withDifficulty = parseWorkload(
    {
      ...base,
      difficulty: { solveRate: { alpha: 0.5, beta: 0.5 }, lengthSigma: 0.5, wrongLengthFactor: 1.5 },
    },
    'test',
  );

  it('drops 30–60% of groups as all-equal, keeps the mean response, and makes wrong answers longer', () => {
    const plans = workloadPlans(withDifficulty);
    let allEqual = 0;
    const right = { tokens: 0, count: 0 };
    const wrong = { tokens: 0, count: 0 };
    let total = 0;
    const problems = 400;
    for (let problem = 0; problem < problems; problem++) {
      const answers = new Set<string>();
      for (let sample = 0; sample < 8; sample++) {
        const plan = plans.planFor(problem, sample);
        answers.add(plan.answer);
        total += plan.responseTokens;
        const side = plan.answer === '1' ? right : wrong;
        side.tokens += plan.responseTokens;
        side.count++;
      }
      if (answers.size === 1) allEqual++;
    }
    expect(allEqual / problems).toBeGreaterThan(0.3);
    expect(allEqual / problems).toBeLessThan(0.6);
    const meanResponse = total / (problems * 8);
    expect(meanResponse).toBeGreaterThan(0.85 * mean(base.responseTokens));
    expect(meanResponse).toBeLessThan(1.15 * mean(base.responseTokens));
    expect(wrong.tokens / wrong.count).toBeGreaterThan(1.2 * (right.tokens / right.count));
  });

  it('without difficulty, nearly no group of 8 is all-equal at a solve rate of 0.5', () => {
    const { difficulty: _, ...rest } = base;
    const plain = workloadPlans(parseWorkload(rest, 'test'));
    let allEqual = 0;
    for (let problem = 0; problem < 200; problem++) {
      const answers = new Set(
        Array.from({ length: 8 }, (_, sample) => plain.planFor(problem, sample).answer),
      );
      if (answers.size === 1) allEqual++;
    }
    expect(allEqual).toBeLessThan(10);
  });
});

describe('workloads that cannot be simulated', () => {
  const paper = JSON.parse(JSON.stringify(loadWorkload('paper')));
  const refused = (changes: Record<string, unknown>) => () => parseWorkload({ ...paper, ...changes }, 'test');

  it('refuses a KV capacity that no trajectory can fit, sizes beyond the caps, and min above max', () => {
    expect(refused({ kvCapacityTokens: 10 })).toThrow('field "kvCapacityTokens": a trajectory can reach');
    expect(refused({ stepPrompts: 1e12 })).toThrow('field "stepPrompts"');
    expect(refused({ replicas: 1e12 })).toThrow('field "replicas"');
    expect(refused({ responseTokens: { lognormal: { mu: 6, sigma: 1 }, min: 5000, max: 100 } })).toThrow(
      'field "responseTokens": min must not exceed max',
    );
    expect(refused({})).not.toThrow();
  });

  it('reads a workload file that starts with a UTF-8 byte-order mark', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-workload-'));
    const path = join(dir, 'bom.json');
    writeFileSync(path, `\uFEFF${JSON.stringify({ ...paper, name: 'bom' })}`);
    expect(loadWorkload(path).name).toBe('bom');
  });
});
