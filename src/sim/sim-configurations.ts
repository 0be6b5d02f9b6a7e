/**
 * The configurations `agentmath simulate` compares, each a setting of the real rollout
 * scheduler and router: the paper's ladder (static synchronous batches → request-level async
 * → + partial rollout → + prefix-aware routing) and the other router policies with partial
 * rollout. The first three use round-robin, the router a plain deployment starts with.
 */
import type { RouterPolicyName } from '../engine/router/index.ts';

export type SimConfiguration = {
  name: string;
  mode: 'sync' | 'async';
  partialRollout: boolean;
  router: RouterPolicyName;
  /** Partial rollout keeps starting fresh groups until B are decided (the rollout's `fillBatch`). */
  fillBatch?: boolean;
  /**
   * KV-capacity-aware admission: at most as many trajectories active at once as the replicas'
   * KV holds at their mean context (prompt + half of response and tool output), instead of
   * the default 4 × B × n.
   */
  kvAdmission?: boolean;
  /**
   * KV-budget admission: a segment starts only while the tokens running trajectories may reach
   * (context so far + segment budget) fit this multiple of the replicas' total KV (the
   * rollout's `kvBudgetTokens`).
   */
  kvBudget?: number;
  /** With `kvBudget`: the rollout's `tailCut` fraction. */
  tailCut?: number;
  /** Run only when named with --configuration (measured, did not help: docs/simulation.md). */
  onRequest?: boolean;
};

export const SIM_CONFIGURATIONS: readonly SimConfiguration[] = [
  { name: 'static-sync', mode: 'sync', partialRollout: false, router: 'round-robin' },
  { name: 'async', mode: 'async', partialRollout: false, router: 'round-robin' },
  { name: 'async+partial', mode: 'async', partialRollout: true, router: 'round-robin' },
  { name: 'async+partial+prefix-aware', mode: 'async', partialRollout: true, router: 'prefix-aware' },
  { name: 'least-requests', mode: 'async', partialRollout: true, router: 'least-requests' },
  { name: 'cache-aware', mode: 'async', partialRollout: true, router: 'cache-aware' },
  // Beyond the paper, tried: a partial-rollout step decides a full batch. It moves work between
  // steps but does not lower the time per kept group (docs/simulation.md), so it is not in the
  // default table.
  {
    name: 'async+partial+prefix-aware+fill',
    mode: 'async',
    partialRollout: true,
    router: 'prefix-aware',
    fillBatch: true,
    onRequest: true,
  },
  {
    name: 'async+partial+prefix-aware+kv-admission',
    mode: 'async',
    partialRollout: true,
    router: 'prefix-aware',
    kvAdmission: true,
    onRequest: true,
  },
  {
    name: 'async+partial+prefix-aware+kv-budget',
    mode: 'async',
    partialRollout: true,
    router: 'prefix-aware',
    kvBudget: 1,
    onRequest: true,
  },
  {
    name: 'async+partial+prefix-aware+kv-budget+tail-cut',
    mode: 'async',
    partialRollout: true,
    router: 'prefix-aware',
    kvBudget: 1,
    tailCut: 0.5,
    onRequest: true,
  },
];
