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

/** No entry (an empty hash bucket, the end of the idle list). */
const NONE = -1;
const INITIAL_ENTRIES = 1024;

/**
 * Storage: the blocks live in typed arrays (an entry's key, reference count and links in the
 * idle list) under an open-addressing hash table (linear probing, deletion by backward shift),
 * and the idle blocks form a doubly linked list, oldest first. This behaves exactly as maps
 * keyed by block (`prefix-cache.test.ts` checks it against them on random operations) and
 * costs no allocation per block: keys of 53 bits are boxed numbers in a `Map`, and a run
 * of `simulate` acquires and releases hundreds of millions of them.
 */
/**
 * `blockKeys` of `first[firstFrom ..]` followed by `second[secondFrom .. secondEnd)`, without
 * building the joined array (a prompt's last partial block and the tokens generated after it).
 */
export function joinedBlockKeys(
  first: readonly number[],
  firstFrom: number,
  second: readonly number[],
  secondFrom: number,
  secondEnd: number,
  blockTokens: number,
  parentKey: BlockKey = ROOT_KEY,
): BlockKey[] {
  const keys: BlockKey[] = [];
  let parent = parentKey;
  const firstTokens = Math.max(0, first.length - firstFrom);
  const secondTokens = Math.max(0, Math.min(secondEnd, second.length) - secondFrom);
  const fullBlocks = Math.floor((firstTokens + secondTokens) / blockTokens);
  for (let block = 0; block < fullBlocks; block++) {
    let high = Math.imul((parent % 0x100000000) ^ 0x85ebca6b, 0xc2b2ae35) >>> 0;
    let low = Math.imul(Math.floor(parent / 0x100000000) ^ 0x27d4eb2f, 0x165667b1) >>> 0;
    const start = block * blockTokens;
    const end = start + blockTokens;
    // Positions in the joined sequence: [start, end) reads `first` below `firstTokens`, then `second`.
    const split = Math.min(end, Math.max(start, firstTokens));
    for (let index = start; index < split; index++) {
      const token = first[firstFrom + index] as number;
      high = Math.imul(high ^ token, 0x01000193) >>> 0;
      low = Math.imul((low + token) ^ (low >>> 15), 0x2c1b3c6d) >>> 0;
    }
    for (let index = split; index < end; index++) {
      const token = second[secondFrom + index - firstTokens] as number;
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
  /** Blocks evicted to host memory, least recently used first; at most `#hostBlocks`. */
  readonly #host = new Map<BlockKey, true>();
  readonly #hostBlocks: number;
  /** Per entry: its key, reference count, and neighbours in the idle list (older, newer). */
  #keys = new Float64Array(INITIAL_ENTRIES);
  #refs = new Int32Array(INITIAL_ENTRIES);
  #older = new Int32Array(INITIAL_ENTRIES);
  #newer = new Int32Array(INITIAL_ENTRIES);
  /** Entries not in use, as a stack (`#free[0 .. #freeCount)`). */
  #free = new Int32Array(INITIAL_ENTRIES);
  #freeCount = 0;
  /** Hash buckets holding entry indices (a power of two, at most half full). */
  #buckets = new Int32Array(2 * INITIAL_ENTRIES).fill(NONE);
  #count = 0;
  #idleCount = 0;
  /** The least and the most recently used idle entries. */
  #idleOldest = NONE;
  #idleNewest = NONE;

  constructor({ blockTokens, hostBlocks = 0 }: { blockTokens: number; hostBlocks?: number }) {
    if (!Number.isInteger(blockTokens) || blockTokens < 1)
      throw new Error('blockTokens must be a positive integer');
    this.blockTokens = blockTokens;
    this.#hostBlocks = hostBlocks;
    for (let entry = 0; entry < INITIAL_ENTRIES; entry++) this.#free[entry] = INITIAL_ENTRIES - 1 - entry;
    this.#freeCount = INITIAL_ENTRIES;
  }

  /** How many keys from `from` on are in host memory, in a run. */
  matchHost(keys: readonly BlockKey[], from: number): number {
    if (this.#host.size === 0) return 0;
    let matched = 0;
    while (from + matched < keys.length && this.#host.has(keys[from + matched] as BlockKey)) matched++;
    return matched;
  }

  /** Takes keys `from .. to` out of host memory (they are being loaded back). */
  takeFromHost(keys: readonly BlockKey[], from = 0, to = keys.length): void {
    if (this.#host.size === 0) return;
    for (let index = from; index < to; index++) this.#host.delete(keys[index] as BlockKey);
  }

  /** Forgets host memory (a weight update makes it stale). */
  dropHost(): void {
    this.#host.clear();
  }

  /** Cached blocks (referenced or not). */
  get blocks(): number {
    return this.#count;
  }

  /** Cached blocks no running sequence holds: what eviction can free. */
  get idleBlocks(): number {
    return this.#idleCount;
  }

  /** How many leading keys are cached. */
  matchLength(keys: readonly BlockKey[]): number {
    let matched = 0;
    while (matched < keys.length && this.#find(keys[matched] as BlockKey) !== NONE) matched++;
    return matched;
  }

  /** Of keys `from .. to`, how many are cached but held by no sequence. */
  idleAmong(keys: readonly BlockKey[], from = 0, to = keys.length): number {
    let idle = 0;
    for (let index = from; index < to; index++) {
      const entry = this.#find(keys[index] as BlockKey);
      if (entry !== NONE && this.#refs[entry] === 0) idle++;
    }
    return idle;
  }

  /** References keys `from .. to`, inserting the missing ones; returns how many were inserted. */
  acquire(keys: readonly BlockKey[], from = 0, to = keys.length): number {
    let inserted = 0;
    for (let index = from; index < to; index++) {
      const key = keys[index] as BlockKey;
      const entry = this.#find(key);
      if (entry === NONE) {
        inserted++;
        this.#insert(key, 1);
        continue;
      }
      const refs = this.#refs[entry] as number;
      if (refs === 0) this.#unlinkIdle(entry);
      this.#refs[entry] = refs + 1;
    }
    return inserted;
  }

  /**
   * Drops one reference from every key. Keys are released deepest first, so of a prefix that
   * falls idle the tail is evicted before the head it hangs on.
   */
  release(keys: readonly BlockKey[]): void {
    for (let index = keys.length - 1; index >= 0; index--) {
      const entry = this.#find(keys[index] as BlockKey);
      if (entry === NONE) continue;
      const refs = this.#refs[entry] as number;
      // An idle block released again keeps its place in the idle order.
      if (refs === 1) {
        this.#refs[entry] = 0;
        this.#linkIdle(entry);
      } else if (refs > 1) this.#refs[entry] = refs - 1;
    }
  }

  /** Evicts up to `count` idle blocks, least recently used first; returns how many. */
  evict(count: number): number {
    let evicted = 0;
    while (evicted < count && this.#idleOldest !== NONE) {
      const entry = this.#idleOldest;
      const key = this.#keys[entry] as BlockKey;
      this.#unlinkIdle(entry);
      this.#remove(entry);
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

  /** The bucket a key starts its probe at (keys are hashes: their low 32 bits are mixed). */
  #home(key: BlockKey): number {
    return (key >>> 0) & (this.#buckets.length - 1);
  }

  #find(key: BlockKey): number {
    const buckets = this.#buckets;
    const mask = buckets.length - 1;
    for (let bucket = (key >>> 0) & mask; ; bucket = (bucket + 1) & mask) {
      const entry = buckets[bucket] as number;
      if (entry === NONE || this.#keys[entry] === key) return entry;
    }
  }

  /** A new entry for a key not in the table, held `refs` times (at least 1: not idle). */
  #insert(key: BlockKey, refs: number): void {
    if (this.#freeCount === 0) this.#grow();
    const entry = this.#free[--this.#freeCount] as number;
    this.#keys[entry] = key;
    this.#refs[entry] = refs;
    this.#place(entry);
    this.#count++;
  }

  #place(entry: number): void {
    const buckets = this.#buckets;
    const mask = buckets.length - 1;
    let bucket = this.#home(this.#keys[entry] as BlockKey);
    while (buckets[bucket] !== NONE) bucket = (bucket + 1) & mask;
    buckets[bucket] = entry;
  }

  /** Takes an entry out of the hash table (backward-shift deletion) and frees it. */
  #remove(entry: number): void {
    const buckets = this.#buckets;
    const mask = buckets.length - 1;
    let hole = this.#home(this.#keys[entry] as BlockKey);
    while (buckets[hole] !== entry) hole = (hole + 1) & mask;
    for (let bucket = (hole + 1) & mask; buckets[bucket] !== NONE; bucket = (bucket + 1) & mask) {
      const moving = buckets[bucket] as number;
      const home = this.#home(this.#keys[moving] as BlockKey);
      // The entry may fill the hole when its home is not cyclically within (hole, bucket].
      const reachable = hole <= bucket ? home > hole && home <= bucket : home > hole || home <= bucket;
      if (reachable) continue;
      buckets[hole] = moving;
      hole = bucket;
    }
    buckets[hole] = NONE;
    this.#free[this.#freeCount++] = entry;
    this.#count--;
  }

  /** Appends an entry to the idle list as its most recently used. */
  #linkIdle(entry: number): void {
    this.#older[entry] = this.#idleNewest;
    this.#newer[entry] = NONE;
    if (this.#idleNewest === NONE) this.#idleOldest = entry;
    else this.#newer[this.#idleNewest] = entry;
    this.#idleNewest = entry;
    this.#idleCount++;
  }

  #unlinkIdle(entry: number): void {
    const older = this.#older[entry] as number;
    const newer = this.#newer[entry] as number;
    if (older === NONE) this.#idleOldest = newer;
    else this.#newer[older] = newer;
    if (newer === NONE) this.#idleNewest = older;
    else this.#older[newer] = older;
    this.#idleCount--;
  }

  /** Doubles the entries and the hash buckets (entries keep their indices). */
  #grow(): void {
    const size = this.#keys.length;
    const keys = new Float64Array(2 * size);
    keys.set(this.#keys);
    this.#keys = keys;
    this.#refs = doubled(this.#refs);
    this.#older = doubled(this.#older);
    this.#newer = doubled(this.#newer);
    // Every entry is in use: the new ones are free.
    const free = new Int32Array(2 * size);
    for (let entry = 0; entry < size; entry++) free[entry] = 2 * size - 1 - entry;
    this.#free = free;
    this.#freeCount = size;
    this.#buckets = new Int32Array(4 * size).fill(NONE);
    for (let entry = 0; entry < size; entry++) this.#place(entry);
  }
}

/** A copy of `array` in one twice as long. */
function doubled(array: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> {
  const grown = new Int32Array(2 * array.length);
  grown.set(array);
  return grown;
}
