/**
 * KV-capacity-aware admission: a weighted semaphore over the KV tokens that active
 * trajectories hold. A trajectory's segment is admitted only while the weights held stay
 * within the budget (the replicas' KV capacity), so the prefixes of trajectories waiting on a
 * tool are not evicted by newcomers and prefilled again on their next turn. A holder's weight
 * follows its context as it grows (`resize`); growing past the budget is allowed (a running
 * trajectory is never stopped), it only holds back the next admission. Waiters are served in
 * arrival order (a heavy one is not overtaken forever), or by their priority where `acquire`
 * is given one (smaller first, compared element by element, arrival order among equals; read
 * again after `reorder()`, when what it depends on changed); one heavier than the whole budget
 * is admitted when nothing else is held.
 */

/** A waiter's rank: compared element by element, smaller first. */
export type KvPriority = () => readonly number[];

/** An admitted weight: resize it as the trajectory's context grows, release it when done. */
export type KvHold = {
  resize(weight: number): void;
  release(): void;
};

export class KvBudget {
  readonly capacity: number;
  #held = 0;
  #holders = 0;
  readonly #waiters: Waiter[] = [];
  #arrivals = 0;
  /** Whether the waiters must be ranked again before the next grant. */
  #unordered = false;

  constructor(capacity: number) {
    if (!Number.isFinite(capacity) || capacity <= 0)
      throw new RangeError(`KV budget must be a positive number of tokens, got ${capacity}`);
    this.capacity = capacity;
  }

  /** Tokens held by admitted trajectories. */
  get held(): number {
    return this.#held;
  }

  /** Trajectories holding a weight. */
  get holders(): number {
    return this.#holders;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /**
   * Resolves with the hold once `weight` tokens are admitted: in arrival order, or by
   * `priority` (smaller first) among the waiters when it is given. When `signal` fires while it
   * waits, it leaves the queue and resolves at once with a hold of nothing.
   */
  acquire(weight: number, options: { priority?: KvPriority; signal?: AbortSignal } = {}): Promise<KvHold> {
    const { priority, signal } = options;
    if (signal?.aborted === true) return Promise.resolve(EMPTY_HOLD);
    if (this.#waiters.length === 0 && this.#fits(weight)) return Promise.resolve(this.#take(weight));
    return new Promise((resolve) => {
      const leave = () => {
        const index = this.#waiters.indexOf(waiter);
        if (index < 0) return;
        this.#waiters.splice(index, 1);
        resolve(EMPTY_HOLD);
        // The head may have changed.
        this.#grant();
      };
      const waiter: Waiter = {
        weight,
        grant: () => {
          signal?.removeEventListener('abort', leave);
          resolve(this.#take(weight));
        },
        priority,
        rank: [],
        arrival: this.#arrivals++,
      };
      this.#waiters.push(waiter);
      signal?.addEventListener('abort', leave, { once: true });
      if (priority !== undefined) this.#unordered = true;
    });
  }

  /** The waiters' priorities may have changed: rank them again, then admit what fits. */
  reorder(): void {
    if (this.#waiters.length === 0) return;
    this.#unordered = true;
    this.#grant();
  }

  #fits(weight: number): boolean {
    return this.#holders === 0 || this.#held + weight <= this.capacity;
  }

  #take(initial: number): KvHold {
    let weight = initial;
    let released = false;
    this.#held += weight;
    this.#holders++;
    return {
      resize: (next) => {
        if (released) return;
        this.#held += next - weight;
        weight = next;
        this.#grant();
      },
      release: () => {
        if (released) return;
        released = true;
        this.#held -= weight;
        this.#holders--;
        this.#grant();
      },
    };
  }

  /** Admits waiters in order while the head fits. */
  #grant(): void {
    if (this.#unordered) {
      this.#unordered = false;
      for (const waiter of this.#waiters) waiter.rank = waiter.priority?.() ?? [];
      this.#waiters.sort(byRank);
    }
    for (
      let next = this.#waiters[0];
      next !== undefined && this.#fits(next.weight);
      next = this.#waiters[0]
    ) {
      this.#waiters.shift();
      next.grant();
    }
  }
}

const EMPTY_HOLD: KvHold = { resize: () => {}, release: () => {} };

type Waiter = {
  weight: number;
  grant: () => void;
  priority: KvPriority | undefined;
  /** The priority as last read. */
  rank: readonly number[];
  arrival: number;
};

function byRank(a: Waiter, b: Waiter): number {
  const length = Math.max(a.rank.length, b.rank.length);
  for (let index = 0; index < length; index++) {
    const difference = (a.rank[index] ?? 0) - (b.rank[index] ?? 0);
    if (difference !== 0) return difference;
  }
  return a.arrival - b.arrival;
}
