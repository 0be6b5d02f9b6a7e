import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildDecontaminationIndex, NgramIndex, wordNgrams } from './decontamination.ts';

const BENCH = 'Find the number of ordered pairs of positive integers (m, n) such that m + n = 100.';

describe('n-gram decontamination', () => {
  it('lower-cases and collapses whitespace before taking word n-grams', () => {
    expect(wordNgrams('A  b\n\tC d', 3)).toEqual(['a b c', 'b c d']);
    expect(wordNgrams('too short', 3)).toEqual([]);
  });

  it('drops a problem sharing one 8-gram, whatever its case and spacing, and names the n-gram', () => {
    const index = new NgramIndex(8);
    index.add(BENCH, 'aime:1');
    const copied = 'Warm-up. FIND the number of ordered   pairs of\npositive integers (m, n) with m - n = 4.';
    const matches = index.matches(copied);
    expect(matches.map((match) => match.ngram)).toContain('find the number of ordered pairs of positive');
    expect(matches.every((match) => match.source === 'aime:1')).toBe(true);
  });

  it('keeps near misses: seven shared words, or shared runs all shorter than n', () => {
    const index = new NgramIndex(8);
    index.add(BENCH, 'aime:1');
    expect(index.matches('Please find the number of ordered pairs of cats.')).toEqual([]);
    expect(
      index.matches(
        'Find the number of ordered triples of positive integers (m, n, k) such that m + n = 100.',
      ),
    ).toEqual([]);
    expect(new NgramIndex(4).matches(BENCH)).toEqual([]);
  });

  it('reads every benchmark JSONL in the data folder and extra files, naming file and line on bad rows', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'synth-decon-'));
    await writeFile(join(dir, 'bench.jsonl'), `${JSON.stringify({ id: 'b-1', problem: BENCH })}\n`);
    const extra = join(dir, 'extra.txt');
    await writeFile(
      extra,
      `${JSON.stringify({ question: 'What is the sum of all the digits of two to the power ten?' })}\n`,
    );
    const { index, files } = await buildDecontaminationIndex({ dataDir: dir, extraFiles: [extra], n: 8 });
    expect(files).toHaveLength(2);
    expect(index.matches(BENCH)[0]?.source).toBe('bench.jsonl:b-1');
    expect(index.matches('what is the sum of all the digits of two to the power ten').length).toBeGreaterThan(
      0,
    );
    const bad = join(dir, 'bad.jsonl');
    await writeFile(bad, `${JSON.stringify({ problem: 'ok fine' })}\n{"answer": 3}\n`);
    await expect(buildDecontaminationIndex({ dataDir: null, extraFiles: [bad] })).rejects.toThrow(
      /bad\.jsonl line 2: missing field "problem"/,
    );
  });
});
