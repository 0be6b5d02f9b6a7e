/** Least-requests: the available replica with the fewest requests in flight. */
import { argminAvailable, type ReplicaView, type RouterPolicy } from './router-policy.ts';

/** Pure: the available index with the fewest requests in flight (ties: lowest index). */
export function leastRequestsChoice(replicas: readonly ReplicaView[]): number {
  return argminAvailable(
    replicas.map((replica) => replica.inFlight),
    replicas.map((replica) => replica.available),
  );
}

export function createLeastRequestsPolicy(): RouterPolicy {
  return {
    name: 'least-requests',
    choose: (_request, replicas) => leastRequestsChoice(replicas),
    onStart: () => {},
    onFinish: () => {},
    onReplicaDown: () => {},
  };
}
