/**
 * The router: an `Engine` over N replicas that picks one per request by a policy. Each replica
 * has a bound on requests in flight; when every healthy replica is full, callers wait for a
 * slot (back-pressure) instead of piling requests onto the servers. A replica whose call fails
 * with an infrastructure error (unreachable, timeout, 5xx, malformed answer) is taken out for
 * `downtimeMs` on the clock, the policy forgets what tied sessions to it, and the same request
 * goes to another replica at once (the new replica re-prefills the prompt); after the downtime
 * the next request to it is the probe. When no replica is healthy the call fails, never hangs.
 * The result names the replica that served it (`replica`).
 */
import type { Clock } from '../../shared/clock.ts';
import { EngineUnavailableError, retryAdvice } from '../engine-errors.ts';
import type { Engine, GenerateRequest, GenerateResult } from '../types.ts';
import type { ReplicaView, RouterPolicy } from './router-policy.ts';

export type RouterReplica = { name: string; engine: Engine };

export type RouterOptions = {
  replicas: readonly RouterReplica[];
  policy: RouterPolicy;
  clock: Clock;
  /** Requests in flight per replica; default 64. */
  maxInFlightPerReplica?: number;
  /** How long a failed replica stays out before it is probed again; default 5000 ms. */
  downtimeMs?: number;
};

/** Per replica counters since the router started. */
export type ReplicaCounters = {
  requests: number;
  promptTokens: number;
  cachedTokens?: number;
  failures: number;
  inFlight: number;
  healthy: boolean;
};

/**
 * An error that says the replica failed, not the request: whatever the engine errors call
 * retryable (unreachable, timeout, 5xx, 429, a malformed answer); a 4xx refusal is not.
 */
export function isReplicaFailure(error: unknown): boolean {
  return retryAdvice(error).retryable;
}

type ReplicaState = {
  replica: RouterReplica;
  inFlight: number;
  downUntil: number;
  counters: ReplicaCounters;
};

export class Router implements Engine {
  readonly name: string;
  readonly policy: RouterPolicy;
  readonly #replicas: ReplicaState[];
  readonly #clock: Clock;
  readonly #maxInFlight: number;
  readonly #downtimeMs: number;
  #waiters: Array<() => void> = [];

  constructor(options: RouterOptions) {
    const { replicas, policy, clock, maxInFlightPerReplica = 64, downtimeMs = 5000 } = options;
    if (replicas.length === 0) throw new RangeError('a router needs at least one replica');
    if (!Number.isInteger(maxInFlightPerReplica) || maxInFlightPerReplica < 1)
      throw new RangeError(`maxInFlightPerReplica must be a positive integer, got ${maxInFlightPerReplica}`);
    this.policy = policy;
    this.name = `router(${policy.name})`;
    this.#clock = clock;
    this.#maxInFlight = maxInFlightPerReplica;
    this.#downtimeMs = downtimeMs;
    this.#replicas = replicas.map((replica) => ({
      replica,
      inFlight: 0,
      downUntil: Number.NEGATIVE_INFINITY,
      counters: { requests: 0, promptTokens: 0, failures: 0, inFlight: 0, healthy: true },
    }));
  }

  async generate(request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
    const tried = new Set<number>();
    let lastError: unknown = null;
    for (;;) {
      const index = await this.#acquire(request, tried, signal);
      if (index === null) {
        // Retryable: the agent's engine call owns retries and backs off on the clock meanwhile.
        throw new EngineUnavailableError(
          `router over ${this.#replicas.map((state) => state.replica.name).join(', ')}`,
          true,
          { cause: lastError },
        );
      }
      const state = this.#replicas[index] as ReplicaState;
      try {
        const result = await state.replica.engine.generate(request, signal);
        this.#count(state, request, result);
        return { ...result, replica: state.replica.name };
      } catch (error) {
        if (!isReplicaFailure(error) || signal?.aborted) throw error;
        lastError = error;
        tried.add(index);
        state.counters.failures++;
        // A rate-limited replica (429 with Retry-After) is out for as long as it asked.
        state.downUntil = this.#clock.now() + (retryAdvice(error).retryAfterMs ?? this.#downtimeMs);
        this.policy.onReplicaDown(index);
      } finally {
        this.#release(index, request);
      }
    }
  }

  /** Counters per replica name. */
  replicaStats(): Record<string, ReplicaCounters> {
    const now = this.#clock.now();
    return Object.fromEntries(
      this.#replicas.map((state) => [
        state.replica.name,
        { ...state.counters, inFlight: state.inFlight, healthy: now >= state.downUntil },
      ]),
    );
  }

  /** Waits for a slot on a replica the policy picks; null when no healthy untried replica is left. */
  async #acquire(
    request: GenerateRequest,
    tried: ReadonlySet<number>,
    signal?: AbortSignal,
  ): Promise<number | null> {
    for (;;) {
      const now = this.#clock.now();
      const healthy = this.#replicas.map((state, index) => !tried.has(index) && now >= state.downUntil);
      if (!healthy.some(Boolean)) return null;
      const views: ReplicaView[] = this.#replicas.map((state, index) => ({
        name: state.replica.name,
        available: (healthy[index] ?? false) && state.inFlight < this.#maxInFlight,
        inFlight: state.inFlight,
      }));
      if (views.some((view) => view.available)) {
        const index = this.policy.choose(request, views);
        const state = this.#replicas[index] as ReplicaState;
        state.inFlight++;
        this.policy.onStart(request, index);
        return index;
      }
      if (signal?.aborted) throw signal.reason;
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal?.removeEventListener('abort', wake);
          resolve();
        };
        this.#waiters.push(wake);
        signal?.addEventListener('abort', wake, { once: true });
      });
    }
  }

  #release(index: number, request: GenerateRequest): void {
    const state = this.#replicas[index] as ReplicaState;
    state.inFlight--;
    this.policy.onFinish(request, index);
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }

  #count(state: ReplicaState, request: GenerateRequest, result: GenerateResult): void {
    state.counters.requests++;
    state.counters.promptTokens += request.promptTokenIds.length;
    if (result.cachedTokens !== undefined)
      state.counters.cachedTokens = (state.counters.cachedTokens ?? 0) + result.cachedTokens;
  }
}
