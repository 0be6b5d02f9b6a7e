import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mean } from './distribution.ts';
import { BUILTIN_WORKLOADS, loadWorkload } from './workload.ts';
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
