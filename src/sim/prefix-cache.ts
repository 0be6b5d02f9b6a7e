/**
 * One replica's prefix cache, at block granularity as paged engines keep it (vLLM hashes full
 * blocks; SGLang's radix tree, at page size > 1, does the same). A block's key hashes its
 * tokens and its parent's key, so a key stands for the whole prefix up to the block's end and
 * the cached part of a prompt is its longest run of leading blocks present. Blocks held by a
 * running sequence are referenced; unreferenced ones stay cached and are evicted least
 * recently used first. Token accounting (how much KV is in use) is the engine's; this file
 * only knows blocks. With a host tier (SGLang's HiCache, LMCache) an evicted block moves to
 * host memory, itself least recently used first within `hostBlocks`, and a later request can
 * load it back instead of computing it again.
 */

/** A 53-bit key: two 32-bit multiplicative hashes folded together. */
export type BlockKey = number;

const ROOT_KEY = 0x9e3779b9;

/** Keys of the full blocks of `tokens` from block `fromBlock` on, chained from `parentKey`. */
export function blockKeys(
  tokens: readonly number[],
  blockTokens: number,
  fromBlock = 0,
  parentKey: BlockKey = ROOT_KEY,
): BlockKey[] {
  const keys: BlockKey[] = [];
  let parent = parentKey;
  const fullBlocks = Math.floor(tokens.length / blockTokens);
  for (let block = fromBlock; block < fullBlocks; block++) {
    let high = Math.imul((parent % 0x100000000) ^ 0x85ebca6b, 0xc2b2ae35) >>> 0;
    let low = Math.imul(Math.floor(parent / 0x100000000) ^ 0x27d4eb2f, 0x165667b1) >>> 0;
    const end = (block + 1) * blockTokens;
    for (let index = block * blockTokens; index < end; index++) {
      const token = tokens[index] as number;
      high = Math.imul(high ^ token, 0x01000193) >>> 0;
      low = Math.imul((low + token) ^ (low >>> 15), 0x2c1b3c6d) >>> 0;
    }
    parent = (high & 0x1fffff) * 0x100000000 + low;
    keys.push(parent);
  }
  return keys;
}

export class PrefixCache {
  readonly blockTokens: number;
  /** Reference counts of every cached block. */
  readonly #refs = new Map<BlockKey, number>();
  /** Unreferenced blocks, least recently used first (Map keeps insertion order). */
  readonly #idle = new Map<BlockKey, true>();
  /** Blocks evicted to host memory, least recently used first; at most `#hostBlocks`. */
  readonly #host = new Map<BlockKey, true>();
  readonly #hostBlocks: number;

  constructor({ blockTokens, hostBlocks = 0 }: { blockTokens: number; hostBlocks?: number }) {
    if (!Number.isInteger(blockTokens) || blockTokens < 1)
      throw new Error('blockTokens must be a positive integer');
    this.blockTokens = blockTokens;
    this.#hostBlocks = hostBlocks;
  }

  /** How many keys from `from` on are in host memory, in a run. */
  matchHost(keys: readonly BlockKey[], from: number): number {
    let matched = 0;
    while (from + matched < keys.length && this.#host.has(keys[from + matched] as BlockKey)) matched++;
    return matched;
  }

  /** Takes keys out of host memory (they are being loaded back). */
  takeFromHost(keys: readonly BlockKey[]): void {
    for (const key of keys) this.#host.delete(key);
  }

  /** Forgets host memory (a weight update makes it stale). */
  dropHost(): void {
    this.#host.clear();
  }

  /** Cached blocks (referenced or not). */
  get blocks(): number {
    return this.#refs.size;
  }

  /** Cached blocks no running sequence holds: what eviction can free. */
  get idleBlocks(): number {
    return this.#idle.size;
  }

  /** How many leading keys are cached. */
  matchLength(keys: readonly BlockKey[]): number {
    let matched = 0;
    while (matched < keys.length && this.#refs.has(keys[matched] as BlockKey)) matched++;
    return matched;
  }

  /** Of these keys, how many are cached but held by no sequence. */
  idleAmong(keys: readonly BlockKey[]): number {
    let idle = 0;
    for (const key of keys) if (this.#idle.has(key)) idle++;
    return idle;
  }

  /** References every key, inserting the missing ones; returns how many were inserted. */
  acquire(keys: readonly BlockKey[]): number {
    let inserted = 0;
    for (const key of keys) {
      const refs = this.#refs.get(key);
      if (refs === undefined) inserted++;
      else if (refs === 0) this.#idle.delete(key);
      this.#refs.set(key, (refs ?? 0) + 1);
    }
    return inserted;
  }

  /**
   * Drops one reference from every key. Keys are released deepest first, so of a prefix that
   * falls idle the tail is evicted before the head it hangs on.
   */
  release(keys: readonly BlockKey[]): void {
    for (let index = keys.length - 1; index >= 0; index--) {
      const key = keys[index] as BlockKey;
      const refs = this.#refs.get(key);
      if (refs === undefined) continue;
      if (refs <= 1) {
        this.#refs.set(key, 0);
        this.#idle.set(key, true);
      } else this.#refs.set(key, refs - 1);
    }
  }

  /** Evicts up to `count` idle blocks, least recently used first; returns how many. */
  evict(count: number): number {
    let evicted = 0;
    for (const key of this.#idle.keys()) {
      if (evicted >= count) break;
      this.#idle.delete(key);
      this.#refs.delete(key);
      if (this.#hostBlocks > 0) {
        this.#host.set(key, true);
        if (this.#host.size > this.#hostBlocks) {
          const oldest = this.#host.keys().next();
          if (oldest.done !== true) this.#host.delete(oldest.value);
        }
      }
      evicted++;
    }
    return evicted;
  }
}
