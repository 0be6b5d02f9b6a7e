/**
 * A clock for tests that moves only when told: `sleep` registers a timer in virtual time and
 * `run(promise)` lets the code under test run until it waits on the clock, then jumps to the
 * next timer, until the promise settles. Nothing sleeps for real, so a ten-minute timeout
 * takes microseconds; a test that deadlocks (no timer pending, promise unsettled) fails.
 */
import type { Clock } from '../src/shared/clock.ts';

type Timer = { at: number; order: number; resolve: () => void };

export class ManualClock implements Clock {
  #now = 0;
  #order = 0;
  #timers: Timer[] = [];

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer: Timer = {
        at: this.#now + Math.max(0, ms),
        order: this.#order++,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.#timers = this.#timers.filter((t) => t !== timer);
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#timers.push(timer);
    });
  }

  /** Timers not yet fired. */
  get pending(): number {
    return this.#timers.length;
  }

  /** Moves to the earliest timer and fires every timer due then. False when none is pending. */
  advanceToNext(): boolean {
    if (this.#timers.length === 0) return false;
    this.#timers.sort((a, b) => a.at - b.at || a.order - b.order);
    const at = this.#timers[0]?.at ?? this.#now;
    this.#now = Math.max(this.#now, at);
    const due = this.#timers.filter((timer) => timer.at <= this.#now);
    this.#timers = this.#timers.filter((timer) => timer.at > this.#now);
    for (const timer of due) timer.resolve();
    return true;
  }

  /** Moves time forward by `ms`, firing every timer due on the way, in order. */
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      this.#timers.sort((a, b) => a.at - b.at || a.order - b.order);
      const next = this.#timers[0];
      if (next === undefined || next.at > until) break;
      this.advanceToNext();
    }
    this.#now = until;
  }

  /** Runs `promise` to completion in virtual time. */
  async run<T>(promise: Promise<T>): Promise<T> {
    let settled = false;
    const watched = promise.finally(() => {
      settled = true;
    });
    watched.catch(() => {});
    for (;;) {
      // Let pending callbacks and I/O of the code under test run (an event-loop turn, no timer).
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (settled) return watched;
      if (!this.advanceToNext()) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (settled) return watched;
        throw new Error(`manual clock: stuck at ${this.#now} ms with no timer pending`);
      }
    }
  }
}
