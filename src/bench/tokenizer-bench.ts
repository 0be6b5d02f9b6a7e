/**
 * `bench tokenizer`: our tokenizer (`HfTokenizer`) against `@huggingface/tokenizers`
 * (tokenizers.js, pure JavaScript, loaded only if installed: it is a devDependency) and the
 * Rust `tokenizers` library through Python, on the parity corpus of `tokenizer-corpus.ts`.
 * Each implementation encodes the whole corpus once (ids compared with the Rust library's:
 * "right"), then `rounds` timed passes over the corpus in order; a text's time is the median
 * of its rounds. Per corpus class: median tokens/s over texts, p99 of the per-text time, and
 * the class's total tokens ÷ total time; ratios are implementation ÷ ours (above 1: faster
 * than ours). The Python figure includes building the library's `Encoding` object but no
 * process crossing (timed inside Python).
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { HfTokenizer } from '../engine/index.ts';
import { ascending, percentile } from '../shared/percentile.ts';
import { runPythonTokenizers } from './python-tokenizers.ts';
import { buildTokenizerCorpus, CORPUS_CLASSES, type CorpusText } from './tokenizer-corpus.ts';

export type TokenizerBenchOptions = {
  /** A folder with tokenizer.json and tokenizer_config.json. */
  tokenizerDir: string;
  /** Benchmark folder for the corpus's benchmark class, or null. */
  dataDir: string | null;
  rounds?: number;
  onProgress?: (message: string) => void;
};

export type ClassFigures = {
  corpusClass: string;
  texts: number;
  tokens: number;
  medianTokensPerSecond: number;
  p99Microseconds: number;
  totalTokensPerSecond: number;
};

export type ImplementationFigures = {
  implementation: string;
  version: string;
  /** Texts whose ids differ from the Rust `tokenizers` library's. */
  mismatchedTexts: number;
  classes: ClassFigures[];
  /** Every text of the corpus together. */
  overall: ClassFigures;
  /** overall median tokens/s ÷ ours. */
  ratioToOurs: number;
};

export type TokenizerBenchReport = {
  tokenizerDir: string;
  texts: number;
  tokens: number;
  rounds: number;
  implementations: ImplementationFigures[];
  /** Implementations that could not run (not installed, failed to load), with the reason. */
  skipped: Array<{ implementation: string; reason: string }>;
};

type Encode = (text: string) => number[];

/** Runs the comparison and returns the figures. */
export async function benchTokenizer(options: TokenizerBenchOptions): Promise<TokenizerBenchReport> {
  const { tokenizerDir, dataDir, rounds = 20, onProgress = () => {} } = options;
  const tokenizerFile = join(tokenizerDir, 'tokenizer.json');
  const tokenizerJson = JSON.parse(await readFile(tokenizerFile, 'utf8'));
  const tokenizerConfig = JSON.parse(await readFile(join(tokenizerDir, 'tokenizer_config.json'), 'utf8'));
  const addedTokens = (tokenizerJson.added_tokens as Array<{ content: string }> | undefined)?.map(
    (token) => token.content,
  );
  const corpus = buildTokenizerCorpus({ dataDir, ...(addedTokens ? { addedTokens } : {}) });
  const texts = corpus.map((entry) => entry.text);

  onProgress(`python tokenizers: ${texts.length} texts × ${rounds} rounds`);
  const python = await runPythonTokenizers({ tokenizerFile, texts, timingRounds: rounds });
  const referenceIds = python.results.map((result) => result.ids);
  const tokenCounts = referenceIds.map((ids) => ids.length);

  const timed: Array<{ implementation: string; version: string; mismatched: number; nanoseconds: number[] }> =
    [];
  const skipped: TokenizerBenchReport['skipped'] = [];
  const ours = new HfTokenizer({ tokenizerJson, tokenizerConfig, where: tokenizerDir });
  onProgress(`ours: ${texts.length} texts × ${rounds} rounds`);
  timed.push({
    implementation: 'ours',
    version: 'HfTokenizer',
    ...timeEncode((text) => ours.encode(text), texts, referenceIds, rounds),
  });
  const tokenizersJs = await loadTokenizersJs(tokenizerJson, tokenizerConfig);
  if (tokenizersJs.status === 'loaded') {
    onProgress(`@huggingface/tokenizers: ${texts.length} texts × ${rounds} rounds`);
    timed.push({
      implementation: '@huggingface/tokenizers',
      version: tokenizersJs.version,
      ...timeEncode(tokenizersJs.encode, texts, referenceIds, rounds),
    });
  } else {
    skipped.push({ implementation: '@huggingface/tokenizers', reason: tokenizersJs.reason });
  }
  timed.push({
    implementation: 'python tokenizers',
    version: python.version,
    mismatched: 0,
    nanoseconds: python.nanoseconds ?? [],
  });

  const figuresOf = (nanoseconds: number[]) => ({
    classes: CORPUS_CLASSES.map((corpusClass) =>
      classFigures(corpusClass, corpus, nanoseconds, tokenCounts),
    ).filter((figures) => figures.texts > 0),
    overall: classFigures('all', corpus, nanoseconds, tokenCounts),
  });
  const oursOverall = figuresOf(timed[0]!.nanoseconds).overall.medianTokensPerSecond;
  return {
    tokenizerDir,
    texts: texts.length,
    tokens: tokenCounts.reduce((sum, count) => sum + count, 0),
    rounds,
    implementations: timed.map((entry) => {
      const figures = figuresOf(entry.nanoseconds);
      return {
        implementation: entry.implementation,
        version: entry.version,
        mismatchedTexts: entry.mismatched,
        ...figures,
        ratioToOurs: figures.overall.medianTokensPerSecond / oursOverall,
      };
    }),
    skipped,
  };
}

/** One untimed pass (ids checked), then `rounds` timed passes; the median time of each text. */
function timeEncode(
  encode: Encode,
  texts: readonly string[],
  referenceIds: readonly number[][],
  rounds: number,
): { mismatched: number; nanoseconds: number[] } {
  let mismatched = 0;
  texts.forEach((text, index) => {
    const ids = encode(text);
    const expected = referenceIds[index]!;
    if (ids.length !== expected.length || ids.some((id, position) => id !== expected[position])) mismatched++;
  });
  const samples = texts.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    texts.forEach((text, index) => {
      const start = process.hrtime.bigint();
      encode(text);
      samples[index]!.push(Number(process.hrtime.bigint() - start));
    });
  }
  return { mismatched, nanoseconds: samples.map((sample) => percentile(ascending(sample), 0.5)) };
}

function classFigures(
  corpusClass: string,
  corpus: readonly CorpusText[],
  nanoseconds: readonly number[],
  tokenCounts: readonly number[],
): ClassFigures {
  const indices = corpus.flatMap((entry, index) =>
    corpusClass === 'all' || entry.corpusClass === corpusClass ? [index] : [],
  );
  // Texts without tokens (the empty string) have no rate.
  const rates = indices
    .filter((index) => tokenCounts[index]! > 0)
    .map((index) => tokenCounts[index]! / (Math.max(nanoseconds[index]!, 1) / 1e9));
  const tokens = indices.reduce((sum, index) => sum + tokenCounts[index]!, 0);
  const totalNanoseconds = indices.reduce((sum, index) => sum + nanoseconds[index]!, 0);
  return {
    corpusClass,
    texts: indices.length,
    tokens,
    medianTokensPerSecond: percentile(ascending(rates), 0.5),
    p99Microseconds: percentile(ascending(indices.map((index) => nanoseconds[index]! / 1000)), 0.99),
    totalTokensPerSecond: tokens / (Math.max(totalNanoseconds, 1) / 1e9),
  };
}

type TokenizersJs =
  | { status: 'loaded'; version: string; encode: Encode }
  | { status: 'missing'; reason: string };

/** `@huggingface/tokenizers` if it is installed (a devDependency: absent from a production install). */
async function loadTokenizersJs(tokenizerJson: unknown, tokenizerConfig: unknown): Promise<TokenizersJs> {
  const specifier = '@huggingface/tokenizers';
  try {
    const library = (await import(specifier)) as {
      Tokenizer: new (
        json: unknown,
        config: unknown,
      ) => { encode(text: string, options: { add_special_tokens: boolean }): { ids: number[] } };
    };
    const tokenizer = new library.Tokenizer(tokenizerJson, tokenizerConfig);
    const version = await readPackageVersion(specifier);
    return {
      status: 'loaded',
      version,
      encode: (text) => tokenizer.encode(text, { add_special_tokens: false }).ids,
    };
  } catch (error) {
    return { status: 'missing', reason: (error as Error).message.split('\n')[0] ?? 'cannot load' };
  }
}

async function readPackageVersion(specifier: string): Promise<string> {
  try {
    const { createRequire } = await import('node:module');
    let folder = dirname(createRequire(import.meta.url).resolve(specifier));
    for (;;) {
      const manifest = JSON.parse(await readFile(join(folder, 'package.json'), 'utf8').catch(() => '{}')) as {
        name?: string;
        version?: string;
      };
      if (manifest.name === specifier) return manifest.version ?? 'unknown';
      if (dirname(folder) === folder) return 'unknown';
      folder = dirname(folder);
    }
  } catch {
    return 'unknown';
  }
}
