/**
 * The configurations `agentmath simulate` compares, each a setting of the real rollout
 * scheduler and router: the paper's ladder (static synchronous batches → request-level async
 * → + partial rollout → + prefix-aware routing), routing apart from partial rollout (a static
 * baseline whose trajectories stay on one replica, async with prefix-aware routing alone), the
 * other router policies with partial rollout, and the full system (+ KV budget + tail cut).
 * The first three of the ladder use round-robin, the router a plain deployment starts with.
 */
import type { RouterPolicyName } from '../engine/router/index.ts';
import { DEFAULT_SKIP_RULE, type SkipRuleOptions } from '../rollout/index.ts';

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
   * KV-budget admission: a segment starts only while the KV that active trajectories hold (each
   * its context so far plus the mean tokens of one call) fits this multiple of the replicas'
   * total KV (the rollout's `kvBudgetTokens`).
   */
  kvBudget?: number;
  /** With `kvBudget`: the rollout's `tailCut` fraction (the step ends below it, see `RolloutConfig`). */
  tailCut?: number;
  /** Groups started beyond the batch as a fraction of it (the rollout's `overProvision`; default its own, 2 groups). */
  overProvision?: number;
  /**
   * A host-memory tier for evicted KV on every replica (SGLang's HiCache), holding this
   * multiple of a replica's KV capacity; loads cost the workload's `costModel.hostLoadPerTokenMs`.
   */
  hostKv?: number;
  /**
   * Chunked prefill on every replica: at most this many prompt tokens prefilled an iteration,
   * beside the decode batch (the engine's `chunkedPrefillTokens`). Absent: a prefill stalls the
   * replica's decode batch for its whole length.
   */
  chunkedPrefillTokens?: number;
  /** A time-to-live on a waiting session's KV on every replica, in virtual seconds (the engine's `kvTtlMs`). */
  kvTtlSeconds?: number;
  /**
   * The rollout's `siblingPriority`: the KV budget's queue ordered by what a group's finished
   * members say (known kept first, likely dropped last, longest expected first). Needs `kvBudget`.
   */
  siblingPriority?: boolean;
  /**
   * The rollout's `abandonAgreeing`, as a count of a group of 8 (scaled to the workload's
   * group size): once that many finished members agree, the rest are abandoned.
   */
  abandonAgreeing?: number;
  /** With `abandonAgreeing`: the rollout's `abandonVerdict` (default `either`). */
  abandonVerdict?: 'either' | 'wrong';
  /**
   * Pre-rollout skipping from each problem's history (`--skip-history`, GRESO): a problem whose
   * last groups were all right or all wrong is skipped before any generation with the rule's
   * probability. Needs a workload with a finite problem set (`problemSet`), where problems recur.
   */
  skipHistory?: SkipRuleOptions;
  /** Run only when named with --configuration (measured, did not help: docs/simulation.md). */
  onRequest?: boolean;
};

/** The full system (partial rollout, prefix-aware routing, KV budget, tail cut) with options added, run when named. */
function fullSystemWith(suffix: string, options: Partial<SimConfiguration>): SimConfiguration {
  return {
    name: `async+partial+prefix-aware+kv-budget+tail-cut${suffix}`,
    mode: 'async',
    partialRollout: true,
    router: 'prefix-aware',
    kvBudget: 1,
    tailCut: 0.5,
    ...options,
    onRequest: true,
  };
}

export const SIM_CONFIGURATIONS: readonly SimConfiguration[] = [
  { name: 'static-sync', mode: 'sync', partialRollout: false, router: 'round-robin' },
  // A synchronous system that shards its batch by replica keeps each trajectory on one: the
  // prefix-aware router's sticky sessions do that (a session moves only under heavy imbalance).
  { name: 'static-sync-sticky', mode: 'sync', partialRollout: false, router: 'prefix-aware' },
  { name: 'async', mode: 'async', partialRollout: false, router: 'round-robin' },
  { name: 'async+prefix-aware', mode: 'async', partialRollout: false, router: 'prefix-aware' },
  { name: 'async+partial', mode: 'async', partialRollout: true, router: 'round-robin' },
  { name: 'async+partial+prefix-aware', mode: 'async', partialRollout: true, router: 'prefix-aware' },
  // The other router policies with partial rollout: run when named (each costs the default
  // table's time limit a run; measured in docs/simulation.md).
  { name: 'least-requests', mode: 'async', partialRollout: true, router: 'least-requests', onRequest: true },
  { name: 'cache-aware', mode: 'async', partialRollout: true, router: 'cache-aware', onRequest: true },
  // Beyond the paper, kept: the tail cut ends a step once the KV held has fallen below half of
  // its peak (it needs the KV budget's account of the held KV). Shorter steps and cheaper
  // kept groups on every workload measured (docs/simulation.md).
  {
    name: 'async+partial+prefix-aware+kv-budget+tail-cut',
    mode: 'async',
    partialRollout: true,
    router: 'prefix-aware',
    kvBudget: 1,
    tailCut: 0.5,
  },
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
    name: 'async+partial+prefix-aware+kv-budget+tail-cut+over-provision',
    mode: 'async',
    partialRollout: true,
    router: 'prefix-aware',
    kvBudget: 1,
    tailCut: 0.5,
    overProvision: 0.25,
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
  // KV kept during tool waits: evicted blocks go to host memory and are loaded back over PCIe
  // instead of prefilled again (docs/simulation.md measures it).
  fullSystemWith('+host-kv', { hostKv: 4 }),
  // Chunked prefill at SGLang's default chunk on an 80 GB GPU (8,192 tokens; also vLLM's
  // `max_num_batched_tokens` for its API server), decode beside each chunk as vLLM and SGLang's
  // `--enable-mixed-chunk` run it (docs/simulation.md measures it).
  fullSystemWith('+chunked-prefill', { chunkedPrefillTokens: 8192 }),
  // The static baseline with the same chunked prefill: does chunking change what it wastes?
  {
    name: 'static-sync+chunked-prefill',
    mode: 'sync',
    partialRollout: false,
    router: 'round-robin',
    chunkedPrefillTokens: 8192,
    onRequest: true,
  },
  // KV kept during tool waits on the GPU: a session's KV pinned for 2 s or 10 s while its tool
  // runs (the `paper` workload's tools take 1.2 s on average; docs/simulation.md measures both).
  // With the host-memory tier as well: what the pins do not keep is loaded back, not prefilled.
  ...[
    { suffix: '+kv-ttl-2s', kvTtlSeconds: 2 },
    { suffix: '+kv-ttl-10s', kvTtlSeconds: 10 },
    { suffix: '+host-kv+kv-ttl-2s', kvTtlSeconds: 2, hostKv: 4 },
  ].map(({ suffix, ...options }) => fullSystemWith(suffix, options)),
  // Pushing the schedule (docs/simulation.md, "Pushing the schedule"): sibling-informed
  // admission order (Seer-like) and early abandonment of groups whose first members agree
  // (APRIL-like; biased, it loses groups whose last members would have disagreed).
  ...[
    { suffix: '+sibling-priority', siblingPriority: true },
    { suffix: '+abandon-6', abandonAgreeing: 6 },
    { suffix: '+abandon-wrong-6', abandonAgreeing: 6, abandonVerdict: 'wrong' as const },
    { suffix: '+abandon-wrong-5', abandonAgreeing: 5, abandonVerdict: 'wrong' as const },
    { suffix: '+abandon-wrong-4', abandonAgreeing: 4, abandonVerdict: 'wrong' as const },
    { suffix: '+host-kv+abandon-wrong-4', hostKv: 4, abandonAgreeing: 4, abandonVerdict: 'wrong' as const },
    { suffix: '+host-kv+abandon-wrong-6', hostKv: 4, abandonAgreeing: 6, abandonVerdict: 'wrong' as const },
    {
      suffix: '+kv-ttl-2s+abandon-wrong-4',
      kvTtlSeconds: 2,
      abandonAgreeing: 4,
      abandonVerdict: 'wrong' as const,
    },
  ].map(({ suffix, ...options }) => fullSystemWith(suffix, options)),
  // Skipping problems by their history, on workloads whose problems recur (`paper-epochs`).
  fullSystemWith('+skip-history', { skipHistory: DEFAULT_SKIP_RULE }),
  {
    name: 'async+prefix-aware+skip-history',
    mode: 'async',
    partialRollout: false,
    router: 'prefix-aware',
    skipHistory: DEFAULT_SKIP_RULE,
    onRequest: true,
  },
];
