/**
 * KV-capacity-aware admission: a weighted semaphore over the KV tokens that active
 * trajectories hold. A trajectory's segment is admitted only while the weights held stay
 * within the budget (the replicas' KV capacity), so the prefixes of trajectories waiting on a
 * tool are not evicted by newcomers and prefilled again on their next turn. A holder's weight
 * follows its context as it grows (`resize`); growing past the budget is allowed (a running
 * trajectory is never stopped), it only holds back the next admission. Waiters are served in
 * arrival order (a heavy one is not overtaken forever); one heavier than the whole budget is
 * admitted when nothing else is held.
 */

/** An admitted weight: resize it as the trajectory's context grows, release it when done. */
export type KvHold = {
  resize(weight: number): void;
  release(): void;
};

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

  /** Trajectories holding a weight. */
  get holders(): number {
    return this.#holders;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** Resolves with the hold once `weight` tokens are admitted. */
  acquire(weight: number): Promise<KvHold> {
    if (this.#waiters.length === 0 && this.#fits(weight)) return Promise.resolve(this.#take(weight));
    return new Promise((resolve) => {
      this.#waiters.push({ weight, grant: () => resolve(this.#take(weight)) });
    });
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
