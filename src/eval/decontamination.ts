/**
 * Stage 1 decontamination: word n-gram overlap between a training problem and evaluation
 * problems. Text is lower-cased and split on whitespace (so runs of spaces and newlines
 * collapse); n is 8 by default and one shared n-gram drops the record, as common open
 * pipelines do. Benchmarks are read from the benchmark data folder (every `*.jsonl` there,
 * field `problem`) and from any extra file given.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { stripBom } from '../shared/text-input.ts';

export const DEFAULT_NGRAM = 8;

/** The n-grams of `text`, each as its words joined by one space. */
export function wordNgrams(text: string, n: number): string[] {
  const words = text
    .toLowerCase()
    .split(/\s+/)
    .filter((word) => word !== '');
  const grams: string[] = [];
  for (let start = 0; start + n <= words.length; start++) grams.push(words.slice(start, start + n).join(' '));
  return grams;
}

/** An index of evaluation n-grams, each remembering one source (`aime24.jsonl:aime24-001`). */
export class NgramIndex {
  readonly n: number;
  readonly #sources = new Map<string, string>();
  #documents = 0;

  constructor(n = DEFAULT_NGRAM) {
    if (!Number.isInteger(n) || n < 1)
      throw new AgentMathError('SYNTH_CONFIG_INVALID', `n-gram size must be a whole number >= 1 (got ${n})`);
    this.n = n;
  }

  get documents(): number {
    return this.#documents;
  }

  add(text: string, source: string): void {
    this.#documents++;
    for (const gram of wordNgrams(text, this.n))
      if (!this.#sources.has(gram)) this.#sources.set(gram, source);
  }

  /** The shared n-grams of `text` with their sources; empty when the text is clean. */
  matches(text: string): { ngram: string; source: string }[] {
    const found = new Map<string, string>();
    for (const gram of wordNgrams(text, this.n)) {
      const source = this.#sources.get(gram);
      if (source !== undefined) found.set(gram, source);
    }
    return [...found].map(([ngram, source]) => ({ ngram, source }));
  }
}

/** Adds every problem of a JSONL file (field `problem`, else `question`); errors name file and line. */
export async function addJsonlToIndex(index: NgramIndex, file: string, label = file): Promise<number> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new AgentMathError(
      'SYNTH_INPUT_INVALID',
      `${file}: cannot read the decontamination file (${(error as Error).message})`,
      { cause: error },
    );
  }
  let added = 0;
  const lines = stripBom(text).split('\n');
  for (let index_ = 0; index_ < lines.length; index_++) {
    const line = lines[index_]!;
    if (line.trim() === '') continue;
    let row: Record<string, unknown>;
    try {
      row = JSON.parse(line) as Record<string, unknown>;
    } catch (error) {
      throw new AgentMathError('SYNTH_INPUT_INVALID', `${file} line ${index_ + 1}: not valid JSON`, {
        cause: error,
      });
    }
    const problem = row.problem ?? row.question;
    if (typeof problem !== 'string') {
      throw new AgentMathError('SYNTH_INPUT_INVALID', `${file} line ${index_ + 1}: missing field "problem"`);
    }
    index.add(problem, `${label}:${typeof row.id === 'string' ? row.id : `line-${index_ + 1}`}`);
    added++;
  }
  return added;
}

/** Builds the index from every `*.jsonl` in `dataDir` (when not null) and each extra file. */
export async function buildDecontaminationIndex(options: {
  dataDir: string | null;
  extraFiles?: readonly string[];
  n?: number;
}): Promise<{ index: NgramIndex; files: string[] }> {
  const index = new NgramIndex(options.n ?? DEFAULT_NGRAM);
  const files: string[] = [];
  if (options.dataDir !== null) {
    const names = (await readdir(options.dataDir)).filter((name) => name.endsWith('.jsonl')).sort();
    for (const name of names) {
      await addJsonlToIndex(index, join(options.dataDir, name), name);
      files.push(join(options.dataDir, name));
    }
  }
  for (const file of options.extraFiles ?? []) {
    await addJsonlToIndex(index, file);
    files.push(file);
  }
  return { index, files };
}
