/** The router over engine replicas and its load-balancing policies. */
export { cacheAwareChoice, cacheAwareOptionsSchema, createCacheAwarePolicy } from './cache-aware-policy.ts';
export { createRouterPolicy, ROUTER_POLICY_NAMES } from './create-router-policy.ts';
export { createLeastRequestsPolicy, leastRequestsChoice } from './least-requests-policy.ts';
export {
  createPrefixAwarePolicy,
  type PrefixAwareOptions,
  prefixAwareChoice,
  prefixAwareOptionsSchema,
  requestWeight,
} from './prefix-aware-policy.ts';
export { PrefixTree } from './prefix-tree.ts';
export { createRoundRobinPolicy, roundRobinChoice } from './round-robin-policy.ts';
export {
  isReplicaFailure,
  type ReplicaCounters,
  Router,
  type RouterOptions,
  type RouterReplica,
} from './router.ts';
export type { ReplicaView, RouteRequest, RouterPolicy, RouterPolicyName } from './router-policy.ts';
