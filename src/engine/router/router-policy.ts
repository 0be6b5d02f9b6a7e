/**
 * The router's policy contract. A policy sees the replicas as plain views (availability,
 * requests in flight) and picks one index; its choice functions are pure, and the policy
 * object only keeps the state they read (a cursor, a sticky map, per-replica prefix trees)
 * up to date through `onStart` / `onFinish`.
 */

export type RouterPolicyName = 'round-robin' | 'least-requests' | 'prefix-aware' | 'cache-aware';

/** A replica as a policy sees it. `available`: healthy and below its in-flight bound. */
export type ReplicaView = { name: string; available: boolean; inFlight: number };

/** What a policy reads from a request. */
export type RouteRequest = { promptTokenIds: readonly number[]; sessionId?: string | undefined };

export interface RouterPolicy {
  readonly name: RouterPolicyName;
  /** The index of an available replica; called only when at least one is available. */
  choose(request: RouteRequest, replicas: readonly ReplicaView[]): number;
  /** The request was sent to `replica`. */
  onStart(request: RouteRequest, replica: number): void;
  /** The request sent to `replica` ended (answered or failed). */
  onFinish(request: RouteRequest, replica: number): void;
  /** The replica failed and is out: forget what ties requests to it. */
  onReplicaDown(replica: number): void;
}

/** The available index with the smallest score (ties: lowest index). */
export function argminAvailable(scores: readonly number[], available: readonly boolean[]): number {
  let best = -1;
  for (let index = 0; index < scores.length; index++) {
    if (!available[index]) continue;
    if (best < 0 || (scores[index] ?? 0) < (scores[best] ?? 0)) best = index;
  }
  if (best < 0) throw new RangeError('no replica is available');
  return best;
}
