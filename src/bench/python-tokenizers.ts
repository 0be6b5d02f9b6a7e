/**
 * The reference tokenizer: the Hugging Face `tokenizers` library (Rust, from the project's
 * locked `.venv`), run once for a whole corpus in one Python process. It returns, per text,
 * the ids of `encode(text, add_special_tokens=False)`, `decode(ids, skip_special_tokens=False)`
 * and the pre-tokenizer's pieces of the normalized text (added tokens not split out), and optionally the time of each encode (median of the rounds,
 * after one warm-up pass over the corpus). With `matchAddedTokens: false` the added tokens are
 * removed from the tokenizer.json first, so that no added token is matched in the text: the
 * reference for our `encode(text, { specialTokens: false })`.
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
tokenizer = tokenizers.Tokenizer.from_str(json.dumps(description))
texts = request['texts']
results = []
for text in texts:
    ids = tokenizer.encode(text, add_special_tokens=False).ids
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
json.dump({'version': tokenizers.__version__, 'results': results, 'nanoseconds': nanoseconds}, sys.stdout)
`;

export type PythonTokenizersRequest = {
  /** Path of a tokenizer.json. */
  tokenizerFile: string;
  texts: readonly string[];
  matchAddedTokens?: boolean;
  /** Timed passes over the corpus after the first (untimed) one; 0: no timing. */
  timingRounds?: number;
  python?: string;
};

export type PythonTokenizersResult = {
  version: string;
  /** Per text: encode ids, their decoding, and the pre-tokenizer's pieces of the normalized text. */
  results: Array<{ ids: number[]; decoded: string; pieces: string[] }>;
  /** Median encode time of each text, or null without timing. */
  nanoseconds: number[] | null;
};

/** Encodes and decodes every text with the `tokenizers` library in one Python process. */
export function runPythonTokenizers(request: PythonTokenizersRequest): Promise<PythonTokenizersResult> {
  const {
    tokenizerFile,
    texts,
    matchAddedTokens = true,
    timingRounds = 0,
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
    child.stdin.end(JSON.stringify({ tokenizerFile, texts, matchAddedTokens, timingRounds }));
  });
}
