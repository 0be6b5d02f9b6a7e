/**
 * Keeps many trajectories from monopolising the event loop. Loop work runs in slices of at
 * most `sliceMs` (measured on the clock); a trajectory that arrives when the current slice is
 * spent waits for the next one, so timers and I/O (other engines' replies, servers in the
 * process) run in between. A slice ends when the clock's `sleep(0)` resolves: with the system
 * clock that is the next timers phase; with a virtual clock it is whatever that clock says, so
 * a virtual clock never depends on real timers. When the process is idle this costs one clock
 * read and nothing else.
 *
 * One `CooperativeYield` per clock (`cooperativeYieldFor`): every trajectory driven by the same
 * clock shares its slices.
 */
import type { Clock } from '../shared/clock.ts';

export type CooperativeYieldOptions = { clock: Clock; sliceMs?: number };

export class CooperativeYield {
  readonly #clock: Clock;
  readonly #sliceMs: number;
  #sliceStartedAt: number | null = null;

  constructor({ clock, sliceMs = 5 }: CooperativeYieldOptions) {
    this.#clock = clock;
    this.#sliceMs = sliceMs;
  }

  /** Null when the caller may go on now; else a promise that resolves in a later slice. */
  yieldIfBusy(): Promise<void> | null {
    return this.#enterSlice() ? null : this.#waitForSlice();
  }

  /** Whether work may run in the current slice (opening one if none is open). */
  #enterSlice(): boolean {
    const now = this.#clock.now();
    if (this.#sliceStartedAt === null) {
      this.#sliceStartedAt = now;
      // Resolves once the event loop (or the virtual clock) got its turn: a new slice may start.
      void this.#clock.sleep(0).then(() => {
        this.#sliceStartedAt = null;
      });
      return true;
    }
    return now - this.#sliceStartedAt < this.#sliceMs;
  }

  async #waitForSlice(): Promise<void> {
    do await this.#clock.sleep(0);
    while (!this.#enterSlice());
  }
}

const perClock = new WeakMap<Clock, CooperativeYield>();

/** The shared yield of every loop driven by `clock`. */
export function cooperativeYieldFor(clock: Clock): CooperativeYield {
  let found = perClock.get(clock);
  if (found === undefined) {
    found = new CooperativeYield({ clock });
    perClock.set(clock, found);
  }
  return found;
}
