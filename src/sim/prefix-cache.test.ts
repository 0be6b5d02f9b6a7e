import { describe, expect, it } from 'vitest';
import { createSeededRandom, type Random, randomInteger } from '../tasks/seeded-random.ts';
import { type BlockKey, blockKeys, joinedBlockKeys, PrefixCache } from './prefix-cache.ts';

/**
 * The prefix cache as it was first written, on maps keyed by block: the reference the
 * typed-array cache must match operation for operation (the simulator's results depend on
 * which blocks are cached and in which order idle ones are evicted).
 */
class MapPrefixCache {
  readonly #refs = new Map<BlockKey, number>();
  readonly #idle = new Map<BlockKey, true>();
  readonly #host = new Map<BlockKey, true>();
  readonly #hostBlocks: number;

  constructor(hostBlocks: number) {
    this.#hostBlocks = hostBlocks;
  }

  matchHost(keys: readonly BlockKey[], from: number): number {
    let matched = 0;
    while (from + matched < keys.length && this.#host.has(keys[from + matched] as BlockKey)) matched++;
    return matched;
  }

  takeFromHost(keys: readonly BlockKey[]): void {
    for (const key of keys) this.#host.delete(key);
  }

  dropHost(): void {
    this.#host.clear();
  }

  get blocks(): number {
    return this.#refs.size;
  }

  get idleBlocks(): number {
    return this.#idle.size;
  }

  matchLength(keys: readonly BlockKey[]): number {
    let matched = 0;
    while (matched < keys.length && this.#refs.has(keys[matched] as BlockKey)) matched++;
    return matched;
  }

  idleAmong(keys: readonly BlockKey[]): number {
    let idle = 0;
    for (const key of keys) if (this.#idle.has(key)) idle++;
    return idle;
  }

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

/**
 * Keys as the simulator makes them, and keys that share their low 32 bits (one home bucket in
 * the hash table), so probing, deletion by backward shift and growth are all exercised.
 */
function keyUniverse(random: Random, size: number): BlockKey[] {
  const tokens = Array.from({ length: size * 4 }, () => randomInteger(random, 0, 255));
  const keys = blockKeys(tokens, 4).slice(0, Math.floor(size / 2));
  while (keys.length < size) {
    const low = randomInteger(random, 0, 15);
    keys.push(randomInteger(random, 0, 0x1fffff) * 0x100000000 + low);
  }
  return [...new Set(keys)];
}

function pick(random: Random, keys: readonly BlockKey[], most: number): BlockKey[] {
  const count = randomInteger(random, 0, most);
  // A run of neighbours (as a prompt's blocks come) or keys drawn anywhere, repeats allowed.
  if (random() < 0.5) {
    const from = randomInteger(random, 0, keys.length - 1);
    return keys.slice(from, from + count);
  }
  return Array.from({ length: count }, () => keys[randomInteger(random, 0, keys.length - 1)] as BlockKey);
}

function expectSameState(
  fast: PrefixCache,
  reference: MapPrefixCache,
  universe: readonly BlockKey[],
  where: string,
): void {
  expect([fast.blocks, fast.idleBlocks], where).toEqual([reference.blocks, reference.idleBlocks]);
  for (const key of universe) {
    const one = [key];
    const fastState = [fast.matchLength(one), fast.idleAmong(one), fast.matchHost(one, 0)];
    const referenceState = [
      reference.matchLength(one),
      reference.idleAmong(one),
      reference.matchHost(one, 0),
    ];
    if (fastState.join() !== referenceState.join())
      expect(fastState, `${where}, key ${key}`).toEqual(referenceState);
  }
}

function runRandomOperations(
  seed: string,
  universeSize: number,
  hostBlocks: number,
  operations: number,
): void {
  const random = createSeededRandom(seed);
  const universe = keyUniverse(random, universeSize);
  const fast = new PrefixCache({ blockTokens: 4, hostBlocks });
  const reference = new MapPrefixCache(hostBlocks);
  // What each simulated sequence holds, so releases are mostly of held blocks, as in the engine.
  const held: BlockKey[][] = [];
  for (let operation = 0; operation < operations; operation++) {
    const where = `${seed}: operation ${operation}`;
    const choice = random();
    if (choice < 0.3) {
      const keys = pick(random, universe, 300);
      expect(fast.acquire(keys), where).toBe(reference.acquire(keys));
      held.push(keys);
    } else if (choice < 0.55) {
      const keys =
        held.length > 0 && random() < 0.8
          ? (held.splice(randomInteger(random, 0, held.length - 1), 1)[0] as BlockKey[])
          : pick(random, universe, 50);
      fast.release(keys);
      reference.release(keys);
    } else if (choice < 0.7) {
      const count = random() < 0.1 ? fast.idleBlocks : randomInteger(random, 0, 40);
      expect(fast.evict(count), where).toBe(reference.evict(count));
    } else if (choice < 0.85) {
      const keys = pick(random, universe, 60);
      expect(fast.matchLength(keys), where).toBe(reference.matchLength(keys));
      expect(fast.idleAmong(keys), where).toBe(reference.idleAmong(keys));
      const from = randomInteger(random, 0, keys.length);
      expect(fast.matchHost(keys, from), where).toBe(reference.matchHost(keys, from));
    } else if (choice < 0.97) {
      const keys = pick(random, universe, 30);
      fast.takeFromHost(keys);
      reference.takeFromHost(keys);
    } else {
      fast.dropHost();
      reference.dropHost();
    }
    if (operation % 25 === 0) expectSameState(fast, reference, universe, where);
  }
  expectSameState(fast, reference, universe, `${seed}: end`);
}

describe('PrefixCache', () => {
  it('behaves as maps keyed by block on random operations (hits, idle order, eviction, host tier)', () => {
    runRandomOperations('small table', 200, 0, 3000);
    runRandomOperations('with a host tier', 200, 40, 3000);
    // More blocks than the table starts with: it grows while blocks are held and idle.
    runRandomOperations('growth', 4000, 300, 1500);
  });

  it('evicts idle blocks oldest first, and a block released twice keeps its place', () => {
    const cache = new PrefixCache({ blockTokens: 4 });
    cache.acquire([1, 2, 3]);
    cache.release([1]);
    cache.release([2, 3]); // deepest first: 3 falls idle before 2
    cache.release([1]); // already idle: stays oldest
    expect([cache.blocks, cache.idleBlocks]).toEqual([3, 3]);
    expect(cache.evict(2)).toBe(2);
    expect([cache.matchLength([1]), cache.matchLength([3]), cache.matchLength([2])]).toEqual([0, 0, 1]);
    cache.acquire([2]);
    expect(cache.evict(5)).toBe(0);
  });

  it('keys two runs of tokens as blockKeys keys them joined', () => {
    const random = createSeededRandom('joined');
    for (let trial = 0; trial < 300; trial++) {
      const first = Array.from({ length: randomInteger(random, 0, 40) }, () => randomInteger(random, 0, 300));
      const second = Array.from({ length: randomInteger(random, 0, 40) }, () =>
        randomInteger(random, 0, 300),
      );
      const firstFrom = randomInteger(random, 0, first.length + 2);
      const secondFrom = randomInteger(random, 0, second.length + 2);
      const secondEnd = randomInteger(random, 0, second.length + 2);
      const blockTokens = randomInteger(random, 1, 9);
      const parent = random() < 0.5 ? undefined : blockKeys([trial, 1, 2, 3], 4)[0];
      const joined = first.slice(firstFrom).concat(second.slice(secondFrom, secondEnd));
      const expected =
        parent === undefined ? blockKeys(joined, blockTokens) : blockKeys(joined, blockTokens, 0, parent);
      expect(joinedBlockKeys(first, firstFrom, second, secondFrom, secondEnd, blockTokens, parent)).toEqual(
        expected,
      );
    }
  });
});
