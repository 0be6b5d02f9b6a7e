/**
 * Free-form answers as the field's reference verifier grades them: our own cases of the kinds
 * its public test suite covers (numbers in prose, math environments, answer phrases, percent,
 * relations and chains, matrices, sets and intervals, doubly escaped LaTeX, near misses), each
 * with the verdict that verifier gives. The bar: ≥ 95% agreement, at most 2 false positives.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { gradeAnswer } from '../src/grader/index.ts';
import { useGraderTestSandbox } from './grader-sandbox.ts';

type Case = { kind: string; prediction: string; reference: string; correct: boolean; note?: string };

const corpus: Case[] = readFileSync(new URL('../src/grader/free-form-corpus.jsonl', import.meta.url), 'utf8')
  .trim()
  .split('\n')
  .map((line, index) => {
    const parsed = JSON.parse(line) as Case;
    if (typeof parsed.correct !== 'boolean')
      throw new Error(`free-form-corpus.jsonl line ${index + 1}: no verdict`);
    return parsed;
  });

const label = (item: Case) =>
  `[${item.kind}] ${JSON.stringify(item.prediction.slice(0, 70))} vs ${JSON.stringify(item.reference.slice(0, 40))}`;

describe('free-form corpus', () => {
  const sandboxOf = useGraderTestSandbox();

  it('has cases of every kind, right and wrong', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(150);
    const kinds = new Set(corpus.map((item) => item.kind));
    for (const kind of [
      'number',
      'set',
      'latex',
      'phrase',
      'percent',
      'relation',
      'matrix',
      'escaping',
      'near-miss',
    ]) {
      expect(kinds).toContain(kind);
    }
    expect(corpus.filter((item) => !item.correct).length).toBeGreaterThanOrEqual(40);
  });

  it('agrees with the reference verdicts on ≥ 95% of the cases, with at most 2 false positives', async () => {
    const disagreements: string[] = [];
    const falsePositives: string[] = [];
    const byKind = new Map<string, { cases: number; agreed: number }>();
    for (const item of corpus) {
      const grade = await gradeAnswer(item.prediction, item.reference, {
        sandbox: sandboxOf(),
        timeoutMs: 20_000,
      });
      expect(grade.correct, `${label(item)}: no verdict (${grade.reason})`).not.toBeNull();
      const agreed = grade.correct === item.correct;
      const tally = byKind.get(item.kind) ?? { cases: 0, agreed: 0 };
      tally.cases++;
      if (agreed) tally.agreed++;
      byKind.set(item.kind, tally);
      if (!agreed)
        disagreements.push(`${label(item)} → ${grade.reason} (extracted ${JSON.stringify(grade.extracted)})`);
      if (grade.correct === true && !item.correct) falsePositives.push(label(item));
    }
    const agreement = (corpus.length - disagreements.length) / corpus.length;
    const lines = [...byKind].map(([kind, { cases, agreed }]) => `  ${kind}: ${agreed}/${cases}`);
    console.log(
      `free-form agreement ${(100 * agreement).toFixed(1)}% (${corpus.length - disagreements.length}/${corpus.length}), ` +
        `false positives ${falsePositives.length}\n${lines.join('\n')}\n` +
        disagreements.map((line) => `  disagrees: ${line}`).join('\n'),
    );
    expect(falsePositives.length).toBeLessThanOrEqual(2);
    expect(agreement).toBeGreaterThanOrEqual(0.95);
  });
});
