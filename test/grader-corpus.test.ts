import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { gradeAnswer } from '../src/grader/index.ts';
import { useGraderTestSandbox } from './grader-sandbox.ts';

type Case = { prediction: string; reference: string; correct: boolean; rule: string; symbolic?: boolean };

const corpus: Case[] = readFileSync(new URL('../src/grader/grader-corpus.jsonl', import.meta.url), 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as Case);

const label = (item: Case) => `${item.prediction.slice(0, 60)} vs ${item.reference.slice(0, 40)}`;

describe('grader corpus', () => {
  it('has at least 300 cases covering every rule', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(300);
    const rules = new Set(corpus.map((item) => item.rule));
    for (const rule of [
      'trap',
      'extraction',
      'exact',
      'normalisation',
      'numeric',
      'structural',
      'text',
      'symbolic',
      'adversarial',
    ]) {
      expect(rules).toContain(rule);
    }
    expect(corpus.filter((item) => item.correct).length).toBeGreaterThan(100);
    expect(corpus.filter((item) => !item.correct).length).toBeGreaterThan(100);
  });

  it('fast path (no sandbox): right verdict, and never "correct" where only SymPy could tell', async () => {
    const failures: string[] = [];
    for (const item of corpus) {
      const result = await gradeAnswer(item.prediction, item.reference);
      // Cases marked symbolic may stay undecided (incorrect) without SymPy, but never wrongly correct.
      const acceptable = item.symbolic
        ? result.correct === false || item.correct
        : result.correct === item.correct;
      if (!acceptable) failures.push(`${label(item)} → ${result.reason}`);
    }
    expect(failures).toEqual([]);
  });
});

describe('grader corpus with the sandbox', () => {
  const sandboxOf = useGraderTestSandbox();

  it('grades every case as the corpus says', async () => {
    const failures: string[] = [];
    for (const item of corpus) {
      const result = await gradeAnswer(item.prediction, item.reference, {
        sandbox: sandboxOf(),
        timeoutMs: 20_000,
      });
      if (result.correct !== item.correct) failures.push(`${label(item)} → ${result.reason}`);
      expect([
        'exact',
        'numeric',
        'structural',
        'symbolic',
        'no-answer',
        'mismatch',
        'timeout',
        'parse-error',
      ]).toContain(result.reason);
    }
    expect(failures).toEqual([]);
  });

  it('names the deciding rule', async () => {
    const reasons = async (prediction: string, reference: string) =>
      (await gradeAnswer(prediction, reference, { sandbox: sandboxOf() })).reason;
    expect(await reasons('\\frac{9\\sqrt{23}}{23}', '\\frac{9}{\\sqrt{23}}')).toBe('symbolic');
    expect(await reasons('0.5', '\\frac12')).toBe('exact');
    expect(await reasons('0.333', '\\frac13')).toBe('numeric');
    expect(await reasons('(9,36) \\cup (0,9)', '(0,9) \\cup (9,36)')).toBe('structural');
    expect(await reasons('[1,2]', '(1,2)')).toBe('mismatch');
    expect(await reasons('I do not know.\nReally.\nNo.\n', '5')).toBe('no-answer');
    expect(await reasons('x^{10^{10^{10}}}', 'x')).toBe('timeout');
    expect(await reasons('\\foo{3}', '3')).toBe('parse-error');
  });

  it('answers a symbolic check that overruns its budget with timeout, and the same check in budget as equal', async () => {
    const prediction = '\\sin^{2}(3x) + \\cos^{2}(3x) + \\tan(x)\\cot(x)';
    const overrun = await gradeAnswer(prediction, '2', { sandbox: sandboxOf(), timeoutMs: 1 });
    expect(overrun).toMatchObject({ correct: false, reason: 'timeout' });
    const inBudget = await gradeAnswer(prediction, '2', { sandbox: sandboxOf(), timeoutMs: 10_000 });
    expect(inBudget).toMatchObject({ correct: true, reason: 'symbolic' });
  });
});

describe('adversarial answers', () => {
  it('grade incorrect with a reason and without hanging', async () => {
    const megabyte = 'x'.repeat(1 << 20);
    const cases: [string, string][] = [
      [megabyte, '5'],
      [`\\boxed{${'1'.repeat(1 << 20)}}`, '1'],
      [`\\boxed{${'{'.repeat(5000)}1${'}'.repeat(5000)}}`, '1'],
      ['\\boxed{10^{10^{10^{10}}}}', '1000'],
      ['\\boxed{9!!!!!!!}', '945'],
      [`\\boxed{${'\\sqrt{'.repeat(400)}2${'}'.repeat(400)}}`, '2'],
    ];
    for (const [prediction, reference] of cases) {
      const result = await gradeAnswer(prediction, reference);
      expect(result.correct).toBe(false);
      expect(['no-answer', 'parse-error', 'mismatch', 'timeout']).toContain(result.reason);
    }
  });
});
