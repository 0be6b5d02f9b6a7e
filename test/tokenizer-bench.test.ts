/**
 * `bench tokenizer` end to end on the embedded byte-level tokenizer's files: every
 * implementation runs, agrees with the Rust library on the corpus, and reports figures for each
 * corpus class (no speed is asserted).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchTokenizer } from '../src/bench/tokenizer-bench.ts';
import { CORPUS_CLASSES } from '../src/bench/tokenizer-corpus.ts';
import { writeByteLevelTokenizerFiles } from '../src/engine/index.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentmath-tokenizer-bench-'));
  await writeByteLevelTokenizerFiles(dir);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('bench tokenizer', () => {
  it('times ours, @huggingface/tokenizers and Python tokenizers on every corpus class', async () => {
    const report = await benchTokenizer({ tokenizerDir: dir, dataDir: null, rounds: 1, coldRepeats: 1 });
    expect(report.skipped).toEqual([]);
    expect(report.implementations.map((entry) => entry.implementation)).toEqual([
      'ours',
      '@huggingface/tokenizers',
      'python tokenizers',
    ]);
    for (const entry of report.implementations) {
      expect(entry.mismatchedTexts).toBe(0);
      expect(entry.classes.map((figures) => figures.corpusClass)).toEqual(
        CORPUS_CLASSES.filter((corpusClass) => corpusClass !== 'benchmark'),
      );
      expect(entry.overall.texts).toBe(report.texts);
      expect(entry.overall.tokens).toBe(report.tokens);
      expect(entry.overall.medianTokensPerSecond).toBeGreaterThan(0);
    }
    expect(report.implementations[0]!.ratioToOurs).toBe(1);
    // Byte-level: one token per UTF-8 byte, and the added tokens written in text.
    expect(report.tokens).toBeGreaterThan(report.texts);
  }, 120_000);
});

describe('bench tokenizer on a broken tokenizer folder', () => {
  it('names the file that is not JSON, with the code TOKENIZER_INVALID, before anything runs', async () => {
    const broken = await mkdtemp(join(tmpdir(), 'agentmath-tokenizer-broken-'));
    try {
      await writeByteLevelTokenizerFiles(broken);
      await writeFile(join(broken, 'tokenizer.json'), '{"model": {"type": "BPE", "voc');
      const error = await benchTokenizer({
        tokenizerDir: broken,
        dataDir: null,
        rounds: 1,
        coldRepeats: 1,
      }).catch((caught: unknown) => caught);
      expect((error as { code?: string }).code).toBe('TOKENIZER_INVALID');
      expect((error as Error).message).toContain(`${join(broken, 'tokenizer.json')}: not JSON`);
    } finally {
      await rm(broken, { recursive: true, force: true });
    }
  });
});
