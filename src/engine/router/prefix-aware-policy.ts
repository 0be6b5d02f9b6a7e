/**
 * Prefix-aware weighted load balancing (the paper's policy). A request whose prefix has L_j
 * tokens weighs w_j = floor(L_j / L_base) + w_base; a replica's load is the sum of the weights
 * it has in flight. An LRU map keeps a session (trajectory) on the replica that served it last,
 * which holds its prefix in KV cache, unless that replica's load exceeds the least-loaded
 * replica's by more than `maxImbalance`; otherwise, and for new sessions, the least-loaded
 * replica is chosen. The paper gives the formula, not L_base, w_base or the threshold: our
 * defaults are L_base = 1024, w_base = 1, maxImbalance = 8 weight units.
 */
import { z } from 'zod';
import { LruMap } from './lru-map.ts';
import { argminAvailable, type RouteRequest, type RouterPolicy } from './router-policy.ts';

export const prefixAwareOptionsSchema = z
  .object({
    baseLength: z.number().int().positive().default(1024),
    baseWeight: z.number().int().nonnegative().default(1),
    maxImbalance: z.number().nonnegative().default(8),
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
}): number {
  const { loads, available, sticky, maxImbalance } = input;
  const least = argminAvailable(loads, available);
  if (sticky === null || !available[sticky]) return least;
  const overloaded = (loads[sticky] ?? 0) - (loads[least] ?? 0) > maxImbalance;
  return overloaded ? least : sticky;
}

export function createPrefixAwarePolicy(
  options: z.input<typeof prefixAwareOptionsSchema> = {},
): RouterPolicy {
  const { baseLength, baseWeight, maxImbalance, stickyCapacity } = prefixAwareOptionsSchema.parse(options);
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
