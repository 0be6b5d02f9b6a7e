/**
 * The reference tokenizer: the Hugging Face `tokenizers` library (Rust, from the project's
 * locked `.venv`), run once for a whole corpus in one Python process. It returns, per text,
 * the ids of `encode(text, add_special_tokens=False)`, `decode(ids, skip_special_tokens=False)`
 * and the pre-tokenizer's pieces of the normalized text (added tokens not split out); the
 * load time and cold first-pass time of `coldRepeats` fresh tokenizers; and optionally the
 * time of each encode (median of `timingRounds` passes, after the cold passes). With
 * `matchAddedTokens: false` the added tokens are removed from the tokenizer.json first, so that
 * no added token is matched in the text: the reference for our `encode(text, { specialTokens:
 * false })`.
 */
import { spawn } from 'node:child_process';
import { trainerPython } from '../shared/python-environments.ts';

const PROGRAM = `
import json, statistics, sys, time
import tokenizers
request = json.load(sys.stdin)
with open(request['tokenizerFile'], encoding='utf-8') as handle:
    description = json.load(handle)
if not request['matchAddedTokens']:
    description['added_tokens'] = []
serialized = json.dumps(description)
texts = request['texts']
load_nanoseconds = []
first_pass_nanoseconds = []
for repeat in range(max(1, request['coldRepeats'])):
    load_start = time.perf_counter_ns()
    tokenizer = tokenizers.Tokenizer.from_str(serialized)
    load_nanoseconds.append(time.perf_counter_ns() - load_start)
    first_pass = 0
    results = []
    for text in texts:
        start = time.perf_counter_ns()
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        first_pass += time.perf_counter_ns() - start
        if repeat == 0:
            results.append(ids)
    first_pass_nanoseconds.append(first_pass)
    if repeat == 0:
        all_ids = results
results = []
for text, ids in zip(texts, all_ids):
    normalized = text if tokenizer.normalizer is None else tokenizer.normalizer.normalize_str(text)
    pieces = [normalized] if tokenizer.pre_tokenizer is None else [
        piece for piece, _ in tokenizer.pre_tokenizer.pre_tokenize_str(normalized)]
    results.append({'ids': ids, 'decoded': tokenizer.decode(ids, skip_special_tokens=False),
                    'pieces': pieces})
nanoseconds = None
rounds = request['timingRounds']
if rounds > 0:
    samples = [[] for _ in texts]
    for _ in range(rounds):
        for index, text in enumerate(texts):
            start = time.perf_counter_ns()
            tokenizer.encode(text, add_special_tokens=False)
            samples[index].append(time.perf_counter_ns() - start)
    nanoseconds = [statistics.median(sample) for sample in samples]
json.dump({'version': tokenizers.__version__, 'results': results, 'nanoseconds': nanoseconds,
           'loadNanoseconds': load_nanoseconds, 'firstPassNanoseconds': first_pass_nanoseconds}, sys.stdout)
`;

export type PythonTokenizersRequest = {
  /** Path of a tokenizer.json. */
  tokenizerFile: string;
  texts: readonly string[];
  matchAddedTokens?: boolean;
  /** Timed passes over the corpus after the cold ones; 0: no timing. */
  timingRounds?: number;
  /** Fresh tokenizers built, each timed on its first pass over the corpus (at least 1). */
  coldRepeats?: number;
  python?: string;
};

export type PythonTokenizersResult = {
  version: string;
  /** Per text: encode ids, their decoding, and the pre-tokenizer's pieces of the normalized text. */
  results: Array<{ ids: number[]; decoded: string; pieces: string[] }>;
  /** Median encode time of each text, or null without timing. */
  nanoseconds: number[] | null;
  /** Time of `Tokenizer.from_str` on the tokenizer.json text, per cold repeat. */
  loadNanoseconds: number[];
  /** Encode time of the whole corpus on a fresh tokenizer's first pass (cold caches), per cold repeat. */
  firstPassNanoseconds: number[];
};

/** Encodes and decodes every text with the `tokenizers` library in one Python process. */
export function runPythonTokenizers(request: PythonTokenizersRequest): Promise<PythonTokenizersResult> {
  const {
    tokenizerFile,
    texts,
    matchAddedTokens = true,
    timingRounds = 0,
    coldRepeats = 1,
    python = trainerPython(),
  } = request;
  return new Promise((resolve, reject) => {
    const child = spawn(python, ['-c', PROGRAM], { stdio: ['pipe', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.on('error', (error) =>
      reject(
        new Error(`${python}: cannot start the tokenizers reference (${error.message})`, { cause: error }),
      ),
    );
    child.on('close', (code) => {
      if (code !== 0) {
        const message = Buffer.concat(stderr).toString('utf8').trim().split('\n').slice(-5).join('\n');
        reject(new Error(`${python}: the tokenizers reference exited with ${code}: ${message}`));
        return;
      }
      resolve(JSON.parse(Buffer.concat(stdout).toString('utf8')) as PythonTokenizersResult);
    });
    child.stdin.end(JSON.stringify({ tokenizerFile, texts, matchAddedTokens, timingRounds, coldRepeats }));
  });
}
