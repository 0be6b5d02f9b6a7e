/**
 * The BPE model of a byte-level tokenizer: a word (byte-level characters) starts as single
 * characters, and the adjacent pair with the lowest merge rank is merged until no ranked pair
 * is left; the symbols are then looked up in the vocabulary. Results are cached per word.
 */
import { TokenizerError } from './tokenizer-errors.ts';

export type BpeModelOptions = {
  vocab: ReadonlyMap<string, number>;
  /** Merges in rank order, each as [left, right]. */
  merges: ReadonlyArray<readonly [string, string]>;
  /** Use a word found whole in the vocabulary without merging (Llama 3). */
  ignoreMerges?: boolean;
  unknownTokenId?: number | null;
  where: string;
};

const MAX_CACHE_ENTRIES = 50_000;

export class BpeModel {
  readonly #vocab: ReadonlyMap<string, number>;
  readonly #ranks = new Map<string, number>();
  readonly #ignoreMerges: boolean;
  readonly #unknownTokenId: number | null;
  readonly #where: string;
  readonly #cache = new Map<string, number[]>();

  constructor(options: BpeModelOptions) {
    this.#vocab = options.vocab;
    options.merges.forEach(([left, right], rank) => {
      const key = pairKey(left, right);
      if (!this.#ranks.has(key)) this.#ranks.set(key, rank);
    });
    this.#ignoreMerges = options.ignoreMerges === true;
    this.#unknownTokenId = options.unknownTokenId ?? null;
    this.#where = options.where;
  }

  /** Token ids of one pre-tokenized word. */
  encodeWord(word: string): number[] {
    const cached = this.#cache.get(word);
    if (cached) return cached;
    const whole = this.#ignoreMerges ? this.#vocab.get(word) : undefined;
    const ids =
      whole !== undefined ? [whole] : this.#merge(Array.from(word)).map((symbol) => this.#lookup(symbol));
    if (this.#cache.size >= MAX_CACHE_ENTRIES) this.#cache.clear();
    this.#cache.set(word, ids);
    return ids;
  }

  #merge(symbols: string[]): string[] {
    while (symbols.length > 1) {
      let bestRank = Number.POSITIVE_INFINITY;
      let bestIndex = -1;
      for (let index = 0; index < symbols.length - 1; index++) {
        const rank = this.#ranks.get(pairKey(symbols[index]!, symbols[index + 1]!));
        if (rank !== undefined && rank < bestRank) {
          bestRank = rank;
          bestIndex = index;
        }
      }
      if (bestIndex < 0) break;
      const left = symbols[bestIndex]!;
      const right = symbols[bestIndex + 1]!;
      const merged: string[] = [];
      for (let index = 0; index < symbols.length; index++) {
        if (index < symbols.length - 1 && symbols[index] === left && symbols[index + 1] === right) {
          merged.push(left + right);
          index++;
        } else {
          merged.push(symbols[index]!);
        }
      }
      symbols = merged;
    }
    return symbols;
  }

  #lookup(symbol: string): number {
    const id = this.#vocab.get(symbol);
    if (id !== undefined) return id;
    if (this.#unknownTokenId !== null) return this.#unknownTokenId;
    throw new TokenizerError(
      'TOKENIZER_UNKNOWN_TOKEN',
      `${this.#where}: symbol ${JSON.stringify(symbol)} is not in model.vocab and there is no unk_token`,
    );
  }
}

function pairKey(left: string, right: string): string {
  return `${left}\u0000${right}`;
}
