/** A router policy by name (what `--router` takes). */
import { createCacheAwarePolicy } from './cache-aware-policy.ts';
import { createLeastRequestsPolicy } from './least-requests-policy.ts';
import { createPrefixAwarePolicy } from './prefix-aware-policy.ts';
import { createRoundRobinPolicy } from './round-robin-policy.ts';
import type { RouterPolicy, RouterPolicyName } from './router-policy.ts';

export const ROUTER_POLICY_NAMES: readonly RouterPolicyName[] = [
  'round-robin',
  'least-requests',
  'prefix-aware',
  'cache-aware',
];

export function createRouterPolicy(name: RouterPolicyName): RouterPolicy {
  switch (name) {
    case 'round-robin':
      return createRoundRobinPolicy();
    case 'least-requests':
      return createLeastRequestsPolicy();
    case 'prefix-aware':
      return createPrefixAwarePolicy();
    case 'cache-aware':
      return createCacheAwarePolicy();
  }
}
