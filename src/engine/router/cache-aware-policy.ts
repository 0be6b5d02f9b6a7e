/**
 * Cache-aware routing, the policy production routers (SGLang's router) use: each replica has an
 * approximate radix tree of the prefixes it served. When the system is imbalanced — the busiest
 * and idlest replicas differ by more than `balanceAbsThreshold` requests in flight AND the
 * busiest has more than `balanceRelThreshold` times the idlest's — the least-loaded replica is
 * chosen. Otherwise the replica with the longest cached-prefix match is chosen when that match
 * covers more than `cacheThreshold` of the prompt, else the replica whose tree is smallest (the
 * most cache room). The chosen replica's tree then records the prompt. Defaults follow SGLang's
 * router (0.5, 32, 1.0001) except the tree capacity, counted here in tokens per replica.
 */
import { z } from 'zod';
import { PrefixTree } from './prefix-tree.ts';
import { argminAvailable, type ReplicaView, type RouterPolicy } from './router-policy.ts';

export const cacheAwareOptionsSchema = z
  .object({
    cacheThreshold: z.number().min(0).max(1).default(0.5),
    balanceAbsThreshold: z.number().nonnegative().default(32),
    balanceRelThreshold: z.number().nonnegative().default(1.0001),
    maxTreeTokens: z.number().int().positive().default(4_000_000),
  })
  .strict();

/** Pure: the cache-aware choice from per-replica match lengths, loads and tree sizes. */
export function cacheAwareChoice(input: {
  replicas: readonly ReplicaView[];
  matchLengths: readonly number[];
  treeSizes: readonly number[];
  promptLength: number;
  cacheThreshold: number;
  balanceAbsThreshold: number;
  balanceRelThreshold: number;
}): number {
  const { replicas, matchLengths, treeSizes, promptLength } = input;
  const available = replicas.map((replica) => replica.available);
  const loads = replicas.map((replica) => replica.inFlight);
  const availableLoads = loads.filter((_, index) => available[index]);
  const max = Math.max(...availableLoads);
  const min = Math.min(...availableLoads);
  const imbalanced = max - min > input.balanceAbsThreshold && max > min * input.balanceRelThreshold;
  if (imbalanced) return argminAvailable(loads, available);
  const best = argminAvailable(
    matchLengths.map((length) => -length),
    available,
  );
  const matchRate = promptLength === 0 ? 0 : (matchLengths[best] ?? 0) / promptLength;
  return matchRate > input.cacheThreshold ? best : argminAvailable(treeSizes, available);
}

export function createCacheAwarePolicy(options: z.input<typeof cacheAwareOptionsSchema> = {}): RouterPolicy {
  const config = cacheAwareOptionsSchema.parse(options);
  const trees: PrefixTree[] = [];
  const tree = (index: number): PrefixTree => {
    while (trees.length <= index) trees.push(new PrefixTree());
    return trees[index] as PrefixTree;
  };
  return {
    name: 'cache-aware',
    choose: (request, replicas) =>
      cacheAwareChoice({
        replicas,
        matchLengths: replicas.map((_, index) => tree(index).matchLength(request.promptTokenIds)),
        treeSizes: replicas.map((_, index) => tree(index).size),
        promptLength: request.promptTokenIds.length,
        ...config,
      }),
    onStart: (request, replica) => {
      const chosen = tree(replica);
      chosen.insert(request.promptTokenIds);
      chosen.evictTo(config.maxTreeTokens);
    },
    onFinish: () => {},
    onReplicaDown: (replica) => {
      trees[replica] = new PrefixTree();
    },
  };
}
