import { describe, expect, it } from 'vitest';
import { KvPins } from './kv-pins.ts';
import { PrefixCache } from './prefix-cache.ts';
import { VirtualClock } from './virtual-clock.ts';

function setup() {
  const clock = new VirtualClock();
  const cache = new PrefixCache({ blockTokens: 4 });
  const expiries: number[] = [];
  const pins = new KvPins({ cache, clock, ttlMs: 1000, onExpire: () => expiries.push(clock.now()) });
  // Two sessions' blocks, held by their requests.
  cache.acquire([1, 2, 3]);
  cache.acquire([11, 12]);
  return { clock, cache, pins, expiries };
}

describe('KvPins', () => {
  it('keeps pinned blocks from eviction until the time-to-live, then lets them fall idle', async () => {
    const { clock, cache, pins, expiries } = setup();
    pins.pin('a', [[3], [1, 2]]);
    pins.pin('b', [[], [11, 12]]);
    expect(cache.idleBlocks).toBe(0);
    expect(cache.evict(5)).toBe(0);
    await clock.run(() => clock.sleep(999));
    expect(cache.idleBlocks).toBe(0);
    await clock.run(() => clock.sleep(1));
    expect(expiries).toEqual([1000, 1000]);
    expect(pins.expired).toBe(2);
    expect(cache.idleBlocks).toBe(5);
    expect(cache.evict(5)).toBe(5);
  });

  it("releases a session's pin when its next request holds the blocks, and every pin at a weight update", async () => {
    const { clock, cache, pins, expiries } = setup();
    pins.pin('a', [[3], [1, 2]]);
    pins.pin('b', [[], [11, 12]]);
    // a's next request references its blocks, then resumes: the pin's references go.
    cache.acquire([1, 2, 3]);
    pins.resume('a');
    expect(pins.used).toBe(1);
    expect(pins.holds('a')).toBe(false);
    expect(cache.idleBlocks).toBe(0);
    pins.releaseAll();
    expect(pins.size).toBe(0);
    expect(cache.idleBlocks).toBe(2);
    // Released pins do not expire later.
    await clock.run(() => clock.sleep(2000));
    expect(expiries).toEqual([]);
    expect(pins.expired).toBe(0);
  });
});
