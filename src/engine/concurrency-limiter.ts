/**
 * A counting semaphore: at most `limit` holders at once, waiters served in arrival order.
 * Waiting can be cancelled with an AbortSignal (the waiter leaves the queue).
 */

/** Thrown to a waiter whose signal aborted before a slot was free. */
export class LimiterAbortedError extends Error {
  constructor() {
    super('aborted while waiting for a free slot');
    this.name = 'LimiterAbortedError';
  }
}

export class ConcurrencyLimiter {
  readonly limit: number;
  #active = 0;
  readonly #waiters: Array<() => void> = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`concurrency limit must be >= 1, got ${limit}`);
    this.limit = limit;
  }

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** Resolves with a release function once a slot is held. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new LimiterAbortedError());
    if (this.#active < this.limit) {
      this.#active++;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        this.#active++;
        resolve(this.#releaser());
      };
      const onAbort = () => {
        const index = this.#waiters.indexOf(grant);
        if (index >= 0) this.#waiters.splice(index, 1);
        reject(new LimiterAbortedError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(grant);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#active--;
      const next = this.#waiters.shift();
      if (next) next();
    };
  }
}
