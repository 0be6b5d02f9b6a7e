import { describe, expect, it } from 'vitest';
import { cacheAwareChoice, createCacheAwarePolicy } from './cache-aware-policy.ts';
import { leastRequestsChoice } from './least-requests-policy.ts';
import { createPrefixAwarePolicy, prefixAwareChoice, requestWeight } from './prefix-aware-policy.ts';
import { PrefixTree } from './prefix-tree.ts';
import { roundRobinChoice } from './round-robin-policy.ts';
import type { ReplicaView } from './router-policy.ts';

const views = (inFlight: number[], available: boolean[] = inFlight.map(() => true)): ReplicaView[] =>
  inFlight.map((count, index) => ({
    name: `r${index}`,
    inFlight: count,
    available: available[index] ?? true,
  }));

describe('round-robin', () => {
  it('takes the next available replica cyclically', () => {
    expect(roundRobinChoice(1, [true, true, true])).toBe(1);
    expect(roundRobinChoice(1, [true, false, true])).toBe(2);
    expect(roundRobinChoice(2, [true, true, false])).toBe(0);
    expect(() => roundRobinChoice(0, [false, false])).toThrow(RangeError);
  });
});

describe('least-requests', () => {
  it('takes the available replica with the fewest in flight, lowest index on ties', () => {
    expect(leastRequestsChoice(views([3, 1, 1]))).toBe(1);
    expect(leastRequestsChoice(views([3, 1, 0], [true, true, false]))).toBe(1);
  });
});

describe('prefix-aware', () => {
  it('weighs w_j = floor(L_j / L_base) + w_base', () => {
    expect(requestWeight(0, 1024, 1)).toBe(1);
    expect(requestWeight(1023, 1024, 1)).toBe(1);
    expect(requestWeight(5000, 1024, 1)).toBe(5);
    expect(requestWeight(5000, 1000, 2)).toBe(7);
  });
  it('keeps the sticky replica unless it is unavailable or overloaded past the threshold', () => {
    const available = [true, true];
    expect(
      prefixAwareChoice({ loads: [5, 0], available, sticky: 0, maxImbalance: 8, maxImbalanceRatio: 0 }),
    ).toBe(0);
    expect(
      prefixAwareChoice({ loads: [9, 0], available, sticky: 0, maxImbalance: 8, maxImbalanceRatio: 0 }),
    ).toBe(1);
    expect(
      prefixAwareChoice({
        loads: [0, 4],
        available: [false, true],
        sticky: 0,
        maxImbalance: 8,
        maxImbalanceRatio: 0,
      }),
    ).toBe(1);
    expect(
      prefixAwareChoice({ loads: [3, 2], available, sticky: null, maxImbalance: 8, maxImbalanceRatio: 0 }),
    ).toBe(1);
  });
  it('tolerates an imbalance that grows with the load (maxImbalanceRatio)', () => {
    const available = [true, true];
    const choice = (loads: number[], ratio: number) =>
      prefixAwareChoice({ loads, available, sticky: 0, maxImbalance: 8, maxImbalanceRatio: ratio });
    // 300 − 200 = 100 > 8: moved under an absolute threshold alone, kept when 8 + 1 × 200 is tolerated.
    expect(choice([300, 200], 0)).toBe(1);
    expect(choice([300, 200], 1)).toBe(0);
    // 409 − 200 = 209 > 8 + 200: overloaded even so.
    expect(choice([409, 200], 1)).toBe(1);
    expect(choice([408, 200], 1)).toBe(0);
    // The policy's default tolerates twice the least-loaded replica's load (plus 8).
    const policy = createPrefixAwarePolicy({ baseLength: 1, baseWeight: 0 });
    const session = { promptTokenIds: new Array(300).fill(1), sessionId: 's' };
    const other = { promptTokenIds: new Array(200).fill(1), sessionId: 'o' };
    policy.onStart(session, 0);
    policy.onStart(other, 1);
    expect(policy.choose({ ...session, promptTokenIds: [1] }, views([1, 1]))).toBe(0);
  });
  it('balances by weight, not request count, and follows a session', () => {
    const policy = createPrefixAwarePolicy({ baseLength: 10, baseWeight: 1, maxImbalance: 100 });
    const long = { promptTokenIds: new Array(95).fill(1), sessionId: 'a' };
    const short = { promptTokenIds: [1], sessionId: 'b' };
    const replicas = views([0, 0]);
    expect(policy.choose(long, replicas)).toBe(0);
    policy.onStart(long, 0); // load 10 on replica 0
    expect(policy.choose(short, replicas)).toBe(1);
    policy.onStart(short, 1);
    const third = { promptTokenIds: [1, 2], sessionId: 'c' };
    expect(policy.choose(third, replicas)).toBe(1); // 1 < 10 although both have one request
    // Session a comes back: sticky to replica 0 though replica 1 is lighter.
    expect(policy.choose({ ...long, promptTokenIds: new Array(120).fill(1) }, replicas)).toBe(0);
    policy.onReplicaDown(0);
    policy.onFinish(long, 0);
    expect(policy.choose(long, views([0, 1]))).toBe(0); // forgotten: least-loaded, replica 0 now empty
  });
});

describe('prefix tree', () => {
  it('matches the longest stored prefix, splits edges and evicts the least recently used leaf', () => {
    const tree = new PrefixTree();
    tree.insert([1, 2, 3, 4]);
    tree.insert([1, 2, 9]);
    expect(tree.size).toBe(5);
    expect(tree.matchLength([1, 2, 3, 7])).toBe(3);
    expect(tree.matchLength([1, 2, 9, 9])).toBe(3);
    expect(tree.matchLength([5])).toBe(0);
    tree.insert([1, 2, 3, 4, 5]); // [1,2,9] is now the oldest leaf
    tree.evictTo(5);
    expect(tree.matchLength([1, 2, 9])).toBe(2);
    expect(tree.matchLength([1, 2, 3, 4, 5])).toBe(5);
  });
});

describe('cache-aware', () => {
  const base = { cacheThreshold: 0.5, balanceAbsThreshold: 2, balanceRelThreshold: 1.5 };
  it('takes the longest match when it covers more than the threshold', () => {
    const choice = cacheAwareChoice({
      ...base,
      replicas: views([1, 0]),
      matchLengths: [8, 2],
      treeSizes: [50, 0],
      promptLength: 10,
    });
    expect(choice).toBe(0);
  });
  it('takes the smallest tree when no match is good enough', () => {
    const choice = cacheAwareChoice({
      ...base,
      replicas: views([0, 0, 0]),
      matchLengths: [4, 0, 0],
      treeSizes: [50, 30, 10],
      promptLength: 10,
    });
    expect(choice).toBe(2);
  });
  it('takes the least-loaded replica when the loads are imbalanced', () => {
    const choice = cacheAwareChoice({
      ...base,
      replicas: views([9, 1]),
      matchLengths: [10, 0],
      treeSizes: [50, 0],
      promptLength: 10,
    });
    expect(choice).toBe(1);
  });
  it('routes a prompt back to the replica whose tree holds its prefix', () => {
    const policy = createCacheAwarePolicy();
    const first = { promptTokenIds: [1, 2, 3, 4] };
    expect(policy.choose(first, views([0, 0]))).toBe(0);
    policy.onStart(first, 0);
    const other = { promptTokenIds: [7, 8, 9] };
    expect(policy.choose(other, views([0, 0]))).toBe(1); // smaller tree
    policy.onStart(other, 1);
    expect(policy.choose({ promptTokenIds: [1, 2, 3, 4, 5, 6] }, views([0, 0]))).toBe(0);
  });
});
