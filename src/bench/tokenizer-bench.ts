/**
 * `bench tokenizer`: our tokenizer (`HfTokenizer`) against `@huggingface/tokenizers`
 * (tokenizers.js, pure JavaScript, loaded only if installed: it is a devDependency) and the
 * Rust `tokenizers` library through Python, on the parity corpus of `tokenizer-corpus.ts`.
 * Each implementation builds `coldRepeats` fresh tokenizers from the parsed tokenizer.json
 * (Python: from its text) and encodes the corpus once with each (load time and cold-cache
 * tokens/s: medians over the repeats; the ids of the first are compared with the Rust
 * library's: "right"), then makes `rounds` timed passes over the corpus in order; a text's time
 * is the median of its rounds. Per corpus class: median tokens/s over texts, p99 of the
 * per-text time, and the class's total tokens ÷ total time; ratios are implementation ÷ ours
 * (above 1: faster than ours). The Python figures include building the library's `Encoding`
 * object but no process crossing (timed inside Python).
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { HfTokenizer, readTokenizerFile } from '../engine/index.ts';
import { ascending, percentile } from '../shared/percentile.ts';
import { runPythonTokenizers } from './python-tokenizers.ts';
import { buildTokenizerCorpus, CORPUS_CLASSES, type CorpusText } from './tokenizer-corpus.ts';

export type TokenizerBenchOptions = {
  /** A folder with tokenizer.json and tokenizer_config.json. */
  tokenizerDir: string;
  /** Benchmark folder for the corpus's benchmark class, or null. */
  dataDir: string | null;
  rounds?: number;
  coldRepeats?: number;
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
  /** Median time to build a tokenizer. */
  loadMilliseconds: number;
  /** Corpus tokens ÷ median time of a fresh tokenizer's first pass (cold caches). */
  coldTokensPerSecond: number;
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
  coldRepeats: number;
  implementations: ImplementationFigures[];
  /** Implementations that could not run (not installed, failed to load), with the reason. */
  skipped: Array<{ implementation: string; reason: string }>;
};

type Encode = (text: string) => number[];

type Timings = {
  implementation: string;
  version: string;
  mismatched: number;
  loadNanoseconds: number[];
  firstPassNanoseconds: number[];
  /** Median time of each text over the timed rounds. */
  nanoseconds: number[];
};

/** Runs the comparison and returns the figures. */
export async function benchTokenizer(options: TokenizerBenchOptions): Promise<TokenizerBenchReport> {
  const { tokenizerDir, dataDir, rounds = 20, coldRepeats = 3, onProgress = () => {} } = options;
  const tokenizerFile = join(tokenizerDir, 'tokenizer.json');
  const tokenizerJson = (await readTokenizerFile(tokenizerFile)) as { added_tokens?: unknown };
  const tokenizerConfig = await readTokenizerFile(join(tokenizerDir, 'tokenizer_config.json'));
  const addedTokens = (tokenizerJson.added_tokens as Array<{ content: string }> | undefined)?.map(
    (token) => token.content,
  );
  const corpus = buildTokenizerCorpus({ dataDir, ...(addedTokens ? { addedTokens } : {}) });
  const texts = corpus.map((entry) => entry.text);
  const passes = `${texts.length} texts, ${coldRepeats} cold + ${rounds} timed passes`;

  onProgress(`python tokenizers: ${passes}`);
  const python = await runPythonTokenizers({ tokenizerFile, texts, timingRounds: rounds, coldRepeats });
  const referenceIds = python.results.map((result) => result.ids);
  const tokenCounts = referenceIds.map((ids) => ids.length);
  const timings: Timings[] = [];
  const skipped: TokenizerBenchReport['skipped'] = [];

  onProgress(`ours: ${passes}`);
  const createOurs = (): Encode => {
    const tokenizer = new HfTokenizer({ tokenizerJson, tokenizerConfig, where: tokenizerDir });
    return (text) => tokenizer.encode(text);
  };
  timings.push({
    implementation: 'ours',
    version: 'HfTokenizer',
    ...timeEncode(createOurs, texts, referenceIds, rounds, coldRepeats),
  });
  const tokenizersJs = await loadTokenizersJs(tokenizerJson, tokenizerConfig);
  if (tokenizersJs.status === 'loaded') {
    onProgress(`@huggingface/tokenizers: ${passes}`);
    timings.push({
      implementation: '@huggingface/tokenizers',
      version: tokenizersJs.version,
      ...timeEncode(tokenizersJs.create, texts, referenceIds, rounds, coldRepeats),
    });
  } else {
    skipped.push({ implementation: '@huggingface/tokenizers', reason: tokenizersJs.reason });
  }
  timings.push({
    implementation: 'python tokenizers',
    version: python.version,
    mismatched: 0,
    loadNanoseconds: python.loadNanoseconds,
    firstPassNanoseconds: python.firstPassNanoseconds,
    nanoseconds: python.nanoseconds ?? [],
  });

  const totalTokens = tokenCounts.reduce((sum, count) => sum + count, 0);
  const figuresOf = (nanoseconds: readonly number[]) => ({
    classes: CORPUS_CLASSES.map((corpusClass) =>
      classFigures(corpusClass, corpus, nanoseconds, tokenCounts),
    ).filter((figures) => figures.texts > 0),
    overall: classFigures('all', corpus, nanoseconds, tokenCounts),
  });
  const oursOverall = figuresOf(timings[0]!.nanoseconds).overall.medianTokensPerSecond;
  return {
    tokenizerDir,
    texts: texts.length,
    tokens: totalTokens,
    rounds,
    coldRepeats,
    implementations: timings.map((entry) => {
      const figures = figuresOf(entry.nanoseconds);
      return {
        implementation: entry.implementation,
        version: entry.version,
        mismatchedTexts: entry.mismatched,
        loadMilliseconds: median(entry.loadNanoseconds) / 1e6,
        coldTokensPerSecond: totalTokens / (Math.max(median(entry.firstPassNanoseconds), 1) / 1e9),
        ...figures,
        ratioToOurs: figures.overall.medianTokensPerSecond / oursOverall,
      };
    }),
    skipped,
  };
}

/** Cold repeats (build, one pass; ids of the first checked), then `rounds` timed passes. */
function timeEncode(
  create: () => Encode,
  texts: readonly string[],
  referenceIds: readonly number[][],
  rounds: number,
  coldRepeats: number,
): Omit<Timings, 'implementation' | 'version'> {
  let mismatched = 0;
  const loadNanoseconds: number[] = [];
  const firstPassNanoseconds: number[] = [];
  let encode: Encode = () => [];
  for (let repeat = 0; repeat < Math.max(1, coldRepeats); repeat++) {
    const loadStart = process.hrtime.bigint();
    encode = create();
    loadNanoseconds.push(Number(process.hrtime.bigint() - loadStart));
    let firstPass = 0;
    texts.forEach((text, index) => {
      const start = process.hrtime.bigint();
      const ids = encode(text);
      firstPass += Number(process.hrtime.bigint() - start);
      if (repeat === 0 && !sameIds(ids, referenceIds[index]!)) mismatched++;
    });
    firstPassNanoseconds.push(firstPass);
  }
  const samples = texts.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    texts.forEach((text, index) => {
      const start = process.hrtime.bigint();
      encode(text);
      samples[index]!.push(Number(process.hrtime.bigint() - start));
    });
  }
  return { mismatched, loadNanoseconds, firstPassNanoseconds, nanoseconds: samples.map(median) };
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
    medianTokensPerSecond: median(rates),
    p99Microseconds: percentile(ascending(indices.map((index) => nanoseconds[index]! / 1000)), 0.99),
    totalTokensPerSecond: tokens / (Math.max(totalNanoseconds, 1) / 1e9),
  };
}

function median(values: readonly number[]): number {
  return percentile(ascending(values), 0.5);
}

function sameIds(left: readonly number[], right: readonly number[]): boolean {
  return left.length === right.length && left.every((id, index) => id === right[index]);
}

type TokenizersJs =
  | { status: 'loaded'; version: string; create: () => Encode }
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
    const create = (): Encode => {
      const tokenizer = new library.Tokenizer(tokenizerJson, tokenizerConfig);
      return (text) => tokenizer.encode(text, { add_special_tokens: false }).ids;
    };
    return { status: 'loaded', version: await readPackageVersion(specifier), create };
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
