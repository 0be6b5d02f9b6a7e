/**
 * Prefix-aware weighted load balancing (the paper's policy). A request whose prefix has L_j
 * tokens weighs w_j = floor(L_j / L_base) + w_base; a replica's load is the sum of the weights
 * it has in flight. An LRU map keeps a session (trajectory) on the replica that served it last,
 * which holds its prefix in KV cache, unless that replica is overloaded: its load exceeds the
 * least-loaded replica's by more than `maxImbalance + maxImbalanceRatio × (least load)`;
 * otherwise, and for new sessions, the least-loaded replica is chosen. Moving a session costs a
 * prefill of its whole context on the new replica, so the threshold grows with the load: under
 * load every replica is busy and a moderate imbalance costs less than the move. The paper gives
 * the formula, not L_base, w_base or the threshold: our defaults are L_base = 1024, w_base = 1,
 * maxImbalance = 8 weight units, maxImbalanceRatio = 1 (docs/simulation.md measures it).
 */
import { z } from 'zod';
import { LruMap } from './lru-map.ts';
import { argminAvailable, type RouteRequest, type RouterPolicy } from './router-policy.ts';

export const prefixAwareOptionsSchema = z
  .object({
    baseLength: z.number().int().positive().default(1024),
    baseWeight: z.number().int().nonnegative().default(1),
    maxImbalance: z.number().nonnegative().default(8),
    maxImbalanceRatio: z.number().nonnegative().default(1),
    stickyCapacity: z.number().int().positive().default(65_536),
  })
  .strict();

export type PrefixAwareOptions = z.infer<typeof prefixAwareOptionsSchema>;

/** w_j = floor(L_j / L_base) + w_base. */
export function requestWeight(prefixLength: number, baseLength: number, baseWeight: number): number {
  return Math.floor(prefixLength / baseLength) + baseWeight;
}

/** Pure: the sticky replica unless unavailable or overloaded, else the least-loaded one. */
export function prefixAwareChoice(input: {
  loads: readonly number[];
  available: readonly boolean[];
  sticky: number | null;
  maxImbalance: number;
  /** Also tolerated: this multiple of the least-loaded replica's load. */
  maxImbalanceRatio: number;
}): number {
  const { loads, available, sticky, maxImbalance, maxImbalanceRatio } = input;
  const least = argminAvailable(loads, available);
  if (sticky === null || !available[sticky]) return least;
  const leastLoad = loads[least] ?? 0;
  const overloaded = (loads[sticky] ?? 0) - leastLoad > maxImbalance + maxImbalanceRatio * leastLoad;
  return overloaded ? least : sticky;
}

export function createPrefixAwarePolicy(
  options: z.input<typeof prefixAwareOptionsSchema> = {},
): RouterPolicy {
  const { baseLength, baseWeight, maxImbalance, maxImbalanceRatio, stickyCapacity } =
    prefixAwareOptionsSchema.parse(options);
  const sticky = new LruMap<string, number>(stickyCapacity);
  const loads: number[] = [];
  const weight = (request: RouteRequest) =>
    requestWeight(request.promptTokenIds.length, baseLength, baseWeight);
  return {
    name: 'prefix-aware',
    choose: (request, replicas) => {
      while (loads.length < replicas.length) loads.push(0);
      const held = request.sessionId === undefined ? undefined : sticky.get(request.sessionId);
      return prefixAwareChoice({
        loads,
        available: replicas.map((replica) => replica.available),
        sticky: held ?? null,
        maxImbalance,
        maxImbalanceRatio,
      });
    },
    onStart: (request, replica) => {
      loads[replica] = (loads[replica] ?? 0) + weight(request);
      if (request.sessionId !== undefined) sticky.set(request.sessionId, replica);
    },
    onFinish: (request, replica) => {
      loads[replica] = Math.max(0, (loads[replica] ?? 0) - weight(request));
    },
    onReplicaDown: (replica) => sticky.deleteWhere((held) => held === replica),
  };
}
