/**
 * The BPE model of a byte-level tokenizer: a word (byte-level characters) starts as the ids of
 * its single characters, and the adjacent pair with the lowest merge rank is merged (every
 * occurrence, left to right) until no ranked pair is left. Pairs are keyed by number
 * (left id × 2^21 + right id) and symbols are ids, so merging allocates no strings. Like the
 * `tokenizers` library, a merge whose parts or result are not in the vocabulary is an error
 * when the model is built. A character that is not in the vocabulary becomes the unknown
 * token; without one it is left out before merging, as `tokenizers` does (SmolLM2's vocabulary lacks 21 of
 * the 256 byte symbols and declares no unknown token). Results are cached per word.
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
/** Ids must stay below this for the numeric pair key to be exact. */
const PAIR_KEY_FACTOR = 2 ** 21;
/** A character outside the vocabulary: takes part in no merge. */
const NOT_IN_VOCAB = -1;

export class BpeModel {
  readonly #vocab: ReadonlyMap<string, number>;
  /** Pair key → merge rank; the merged id of rank r is `#mergedIds[r]`. */
  readonly #ranks = new Map<number, number>();
  readonly #mergedIds: number[] = [];
  readonly #ignoreMerges: boolean;
  readonly #unknownTokenId: number | null;
  readonly #where: string;
  readonly #cache = new Map<string, number[]>();

  constructor(options: BpeModelOptions) {
    this.#vocab = options.vocab;
    this.#where = options.where;
    options.merges.forEach(([left, right], rank) => {
      const leftId = this.#mergePart(left, rank);
      const rightId = this.#mergePart(right, rank);
      const mergedId = this.#mergePart(left + right, rank);
      const key = leftId * PAIR_KEY_FACTOR + rightId;
      this.#mergedIds.push(mergedId);
      if (!this.#ranks.has(key)) this.#ranks.set(key, rank);
    });
    this.#ignoreMerges = options.ignoreMerges === true;
    this.#unknownTokenId = options.unknownTokenId ?? null;
  }

  /** Token ids of one pre-tokenized word. */
  encodeWord(word: string): number[] {
    const cached = this.#cache.get(word);
    if (cached) return cached;
    const whole = this.#ignoreMerges ? this.#vocab.get(word) : undefined;
    const ids = whole !== undefined ? [whole] : this.#merge(word);
    if (this.#cache.size >= MAX_CACHE_ENTRIES) this.#cache.clear();
    this.#cache.set(word, ids);
    return ids;
  }

  #merge(word: string): number[] {
    let symbols: number[] = [];
    for (const char of word) {
      const id = this.#vocab.get(char);
      // Without an unknown token the character is left out before merging (its neighbours may merge).
      if (id !== undefined) symbols.push(id);
      else if (this.#unknownTokenId !== null) symbols.push(NOT_IN_VOCAB);
    }
    while (symbols.length > 1) {
      let bestRank = Number.POSITIVE_INFINITY;
      for (let index = 0; index < symbols.length - 1; index++) {
        const rank = this.#rankOf(symbols[index]!, symbols[index + 1]!);
        if (rank !== undefined && rank < bestRank) bestRank = rank;
      }
      if (bestRank === Number.POSITIVE_INFINITY) break;
      const merged: number[] = [];
      const mergedId = this.#mergedIds[bestRank]!;
      for (let index = 0; index < symbols.length; index++) {
        if (index < symbols.length - 1 && this.#rankOf(symbols[index]!, symbols[index + 1]!) === bestRank) {
          merged.push(mergedId);
          index++;
        } else {
          merged.push(symbols[index]!);
        }
      }
      symbols = merged;
    }
    const unknown = this.#unknownTokenId;
    return symbols.map((id) => (id === NOT_IN_VOCAB ? (unknown as number) : id));
  }

  #rankOf(left: number, right: number): number | undefined {
    if (left === NOT_IN_VOCAB || right === NOT_IN_VOCAB) return undefined;
    return this.#ranks.get(left * PAIR_KEY_FACTOR + right);
  }

  #mergePart(token: string, rank: number): number {
    const id = this.#vocab.get(token);
    if (id !== undefined && id < PAIR_KEY_FACTOR) return id;
    throw new TokenizerError(
      'TOKENIZER_INVALID',
      id === undefined
        ? `${this.#where}: model.merges.${rank}: ${JSON.stringify(token)} is not in model.vocab`
        : `${this.#where}: model.vocab: id ${id} is too large (at most ${PAIR_KEY_FACTOR - 1})`,
    );
  }
}
