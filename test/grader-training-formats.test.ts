/**
 * The answer formats of real training data (src/grader/training-formats-corpus.jsonl, our own
 * wording): several boxes, labelled references, ratios, lists joined by words, units in boxes,
 * `<think>` responses, intervals against inequalities, Markdown answer lines, matrix computations,
 * lists of tuples with repeats or `;`, references joined by words, labelled roots and
 * assignments, inequalities on `|t|` or `h(x)` as sets, values in prose — each with its verdict,
 * graded with the jailed sandbox. Cases where Math-Verify gives the other verdict carry a `note` saying why.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { gradeAnswer } from '../src/grader/index.ts';
import { useGraderTestSandbox } from './grader-sandbox.ts';

type Case = { kind: string; prediction: string; reference: string; correct: boolean; note?: string };

const corpus: Case[] = readFileSync(
  new URL('../src/grader/training-formats-corpus.jsonl', import.meta.url),
  'utf8',
)
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as Case);

describe('training-data answer formats', () => {
  const sandboxOf = useGraderTestSandbox();

  it('covers every format with right answers and near misses', () => {
    for (const kind of [
      'boxes',
      'label',
      'ratio',
      'list',
      'units',
      'think',
      'interval',
      'markdown',
      'matrix',
      'tuple-list',
      'words-reference',
      'labelled-roots',
      'value-set',
      'prose-value',
    ]) {
      const cases = corpus.filter((item) => item.kind === kind);
      expect(cases.some((item) => item.correct)).toBe(true);
      expect(cases.some((item) => !item.correct)).toBe(true);
    }
  });

  it('grades every case as the corpus says', async () => {
    const failures: string[] = [];
    for (const item of corpus) {
      const result = await gradeAnswer(item.prediction, item.reference, {
        sandbox: sandboxOf(),
        timeoutMs: 20_000,
      });
      if (result.correct !== item.correct) {
        failures.push(
          `[${item.kind}] ${item.prediction} vs ${item.reference} → ${result.correct} (${result.reason})`,
        );
      }
    }
    expect(failures).toEqual([]);
  });
});
