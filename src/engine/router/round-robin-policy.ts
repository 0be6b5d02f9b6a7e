/** Round-robin: the next available replica after the last one chosen. */
import type { ReplicaView, RouterPolicy } from './router-policy.ts';

/** Pure: the first available index at or after `cursor` (cyclically). */
export function roundRobinChoice(cursor: number, available: readonly boolean[]): number {
  for (let offset = 0; offset < available.length; offset++) {
    const index = (cursor + offset) % available.length;
    if (available[index]) return index;
  }
  throw new RangeError('no replica is available');
}

export function createRoundRobinPolicy(): RouterPolicy {
  let cursor = 0;
  return {
    name: 'round-robin',
    choose: (_request, replicas: readonly ReplicaView[]) =>
      roundRobinChoice(
        cursor % replicas.length,
        replicas.map((replica) => replica.available),
      ),
    onStart: (_request, replica) => {
      cursor = replica + 1;
    },
    onFinish: () => {},
    onReplicaDown: () => {},
  };
}
