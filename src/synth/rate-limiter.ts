/**
 * A request-rate limit: starts are spaced at least `60000 / perMinute` ms apart, in the
 * order callers arrived. Concurrency is limited separately (the number of workers).
 */
import type { Clock } from '../shared/clock.ts';

export class RateLimiter {
  readonly #intervalMs: number;
  readonly #clock: Clock;
  #next = Number.NEGATIVE_INFINITY;

  /** `perMinute` 0 means no limit. */
  constructor(perMinute: number, clock: Clock) {
    this.#intervalMs = perMinute > 0 ? 60_000 / perMinute : 0;
    this.#clock = clock;
  }

  /** Resolves when the caller may start its request. */
  async take(signal?: AbortSignal): Promise<void> {
    if (this.#intervalMs === 0) return;
    const now = this.#clock.now();
    const start = Math.max(now, this.#next);
    this.#next = start + this.#intervalMs;
    if (start > now) await this.#clock.sleep(start - now, signal);
  }
}
