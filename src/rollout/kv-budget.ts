/**
 * KV-capacity-aware admission: a weighted semaphore over the KV tokens that running
 * trajectories may come to hold. A trajectory's segment is admitted only while the weights
 * held stay within the budget (the replicas' KV capacity), so the prefixes of trajectories
 * waiting on a tool are not evicted by newcomers and re-prefilled on their next turn. Waiters
 * are served in arrival order (a heavy one is not overtaken forever); one heavier than the
 * whole budget is admitted when nothing else is held.
 */
export class KvBudget {
  readonly capacity: number;
  #held = 0;
  #holders = 0;
  readonly #waiters: { weight: number; grant: () => void }[] = [];

  constructor(capacity: number) {
    if (!Number.isFinite(capacity) || capacity <= 0)
      throw new RangeError(`KV budget must be a positive number of tokens, got ${capacity}`);
    this.capacity = capacity;
  }

  /** Tokens held by admitted trajectories. */
  get held(): number {
    return this.#held;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** Resolves with a release function once `weight` tokens are admitted. */
  acquire(weight: number): Promise<() => void> {
    if (this.#waiters.length === 0 && this.#fits(weight)) return Promise.resolve(this.#take(weight));
    return new Promise((resolve) => {
      this.#waiters.push({ weight, grant: () => resolve(this.#take(weight)) });
    });
  }

  #fits(weight: number): boolean {
    return this.#holders === 0 || this.#held + weight <= this.capacity;
  }

  #take(weight: number): () => void {
    this.#held += weight;
    this.#holders++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#held -= weight;
      this.#holders--;
      for (
        let next = this.#waiters[0];
        next !== undefined && this.#fits(next.weight);
        next = this.#waiters[0]
      ) {
        this.#waiters.shift();
        next.grant();
      }
    };
  }
}
