/**
 * A time-to-live on a waiting session's KV, as Continuum pins it (Li et al., arXiv 2511.02230,
 * built on vLLM): when a session's request ends at a stop string (a tool call follows), the
 * replica keeps that request's blocks referenced, so not evictable, until the session's next
 * request is admitted here or `ttlMs` of virtual time pass, whichever is first. Then they fall
 * idle as the most recently used blocks (vLLM's free-block queue appends a freed block) and are
 * evicted as any other. Pinned blocks are cached blocks held by no sequence: they count against
 * the replica's KV, so admission waits for the room they hold and a growing batch may be
 * preempted for it. The engine lets a pinned session's next request in ahead of its queue
 * (Continuum's program-level first-come-first-serve). Not modelled: Continuum's per-call TTL
 * from predicted tool times (one fixed TTL here).
 */
import type { BlockKey, PrefixCache } from './prefix-cache.ts';
import type { ScheduledEvent, VirtualClock } from './virtual-clock.ts';

type Pin = {
  /** Block runs referenced for the pin, released in this order (each deepest first). */
  runs: readonly (readonly BlockKey[])[];
  expiry: ScheduledEvent;
};

export class KvPins {
  readonly #cache: PrefixCache;
  readonly #clock: VirtualClock;
  readonly #ttlMs: number;
  readonly #onExpire: () => void;
  readonly #pins = new Map<string, Pin>();
  /** Sessions whose next request found their pin here. */
  used = 0;
  /** Pins released by their time-to-live. */
  expired = 0;

  /** `onExpire` runs after a pin's time-to-live released its blocks (room for waiting work). */
  constructor(options: { cache: PrefixCache; clock: VirtualClock; ttlMs: number; onExpire: () => void }) {
    if (!(options.ttlMs > 0)) throw new Error('ttlMs must be positive');
    this.#cache = options.cache;
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs;
    this.#onExpire = options.onExpire;
  }

  /** Sessions whose KV is pinned. */
  get size(): number {
    return this.#pins.size;
  }

  /** Whether the session's KV is pinned. */
  holds(session: string): boolean {
    return this.#pins.has(session);
  }

  /** Keeps the references the caller holds on `runs` for the session, for at most the time-to-live. */
  pin(session: string, runs: readonly (readonly BlockKey[])[]): void {
    this.#release(session);
    const expiry = this.#clock.schedule(this.#ttlMs, () => {
      if (!this.#release(session)) return;
      this.expired++;
      this.#onExpire();
    });
    this.#pins.set(session, { runs, expiry });
  }

  /** The session's next request was admitted (it holds its own references now): drop the pin. */
  resume(session: string): void {
    if (this.#release(session)) this.used++;
  }

  /** Drops every pin (a weight update makes the KV stale). */
  releaseAll(): void {
    for (const session of [...this.#pins.keys()]) this.#release(session);
  }

  #release(session: string): boolean {
    const pin = this.#pins.get(session);
    if (pin === undefined) return false;
    this.#pins.delete(session);
    pin.expiry.cancel();
    for (const run of pin.runs) this.#cache.release(run);
    return true;
  }
}
