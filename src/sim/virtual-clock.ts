/**
 * A `Clock` whose time moves only when the simulated world is idle. `run(main)` drives a
 * simulation: it lets every runnable task go on (all promise work drained), then moves time to
 * the earliest pending timer and fires every timer due at that instant, in the order they were
 * set, and repeats until `main` settles. Nothing really sleeps, and for the same inputs the
 * same events happen at the same virtual instants.
 *
 * Idle detection: a task is runnable when a microtask or an immediate is queued for it. One
 * `setImmediate` round runs all of those (Node drains microtasks after every macrotask), and
 * the round counts as idle when no task touched the clock (`now`, `sleep`, `schedule`) during
 * it. The code it drives must take its time from the clock (the agent loop, its cooperative
 * yield, the scheduler and the router do). For code that waits for real timers, `realFlushMs`
 * adds a real `setTimeout(0)` round before time moves whenever an event-loop turn took that
 * long; the order of events then depends on real time, so a run is no longer reproducible.
 * Code that waits for real I/O cannot be simulated and shows up as a stall.
 */
import type { Clock } from '../shared/clock.ts';
import { SimulationStalledError } from './sim-errors.ts';

type Timer = { atMs: number; order: number; fire: () => void; cancelled: boolean };

export type VirtualClockOptions = {
  /** Virtual time at the start, ms (default 0). */
  startMs?: number;
  /**
   * For code that waits for real timers: an event-loop turn this long (real ms) makes the next
   * idle check pass a real timers phase, and so does activity during such a pass. Default
   * null (off): the code the simulator drives takes its time from the clock.
   */
  realFlushMs?: number | null;
};

/** A handle to cancel a callback set with `schedule`. */
export type ScheduledEvent = { cancel(): void };

export class VirtualClock implements Clock {
  #nowMs: number;
  #order = 0;
  #activity = 0;
  #heap: Timer[] = [];
  readonly #realFlushMs: number | null;
  #flushDue = false;
  /** Real time at the end of the last idle-check round: the current turn began then. */
  #turnStarted = 0;
  #running = false;
  /** Timers fired so far (a measure of how much the simulation did). */
  firedTimers = 0;
  /** Idle checks that passed a real timers phase (each costs about 1 ms of real time). */
  realFlushes = 0;

  constructor({ startMs = 0, realFlushMs = null }: VirtualClockOptions = {}) {
    this.#nowMs = startMs;
    this.#realFlushMs = realFlushMs;
  }

  now(): number {
    this.#activity++;
    return this.#nowMs;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.#activity++;
    if (signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const onAbort = () => {
        event.cancel();
        resolve();
      };
      const event = this.schedule(Math.max(0, ms), () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Calls `fire` when virtual time reaches now + `delayMs` (timers at one instant fire in order set). */
  schedule(delayMs: number, fire: () => void): ScheduledEvent {
    this.#activity++;
    const timer: Timer = {
      atMs: this.#nowMs + Math.max(0, delayMs),
      order: this.#order++,
      fire,
      cancelled: false,
    };
    this.#push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
      },
    };
  }

  /**
   * Runs `main` to completion in virtual time and returns its result. Throws
   * `SimulationStalledError` when every task waits and no timer is pending.
   */
  async run<T>(main: () => Promise<T>): Promise<T> {
    if (this.#running) throw new Error('VirtualClock.run is already running');
    this.#running = true;
    this.#turnStarted = performance.now();
    const box: { outcome: { ok: true; value: T } | { ok: false; error: unknown } | null } = { outcome: null };
    main().then(
      (value) => {
        box.outcome = { ok: true, value };
      },
      (error: unknown) => {
        box.outcome = { ok: false, error };
      },
    );
    try {
      for (;;) {
        await this.#untilIdle();
        const outcome = box.outcome;
        if (outcome !== null) {
          if (outcome.ok) return outcome.value;
          throw outcome.error;
        }
        if (!this.#advance()) throw new SimulationStalledError(this.#nowMs);
      }
    } finally {
      this.#running = false;
    }
  }

  /** Moves time to the earliest pending timer and fires every timer due then; false when none. */
  #advance(): boolean {
    this.#dropCancelled();
    const first = this.#heap[0];
    if (first === undefined) return false;
    this.#nowMs = first.atMs;
    while (this.#heap[0] !== undefined && this.#heap[0].atMs <= this.#nowMs) {
      const timer = this.#pop();
      if (timer.cancelled) continue;
      this.firedTimers++;
      timer.fire();
    }
    return true;
  }

  async #untilIdle(): Promise<void> {
    const flushMs = this.#realFlushMs;
    for (;;) {
      const before = this.#activity;
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (flushMs === null) {
        if (this.#activity === before) return;
        continue;
      }
      this.#noteTurn(flushMs);
      if (this.#activity !== before) continue;
      if (!this.#flushDue) return;
      this.#flushDue = false;
      this.realFlushes++;
      await new Promise<void>((resolve) => setTimeout(resolve, 0));
      this.#noteTurn(flushMs);
      if (this.#activity === before) return;
      // Work ran in that timers phase and may have yielded to the next one.
      this.#flushDue = true;
    }
  }

  /** Marks a flush due when the event-loop turn that just ended took `flushMs` or longer. */
  #noteTurn(flushMs: number): void {
    const now = performance.now();
    if (now - this.#turnStarted >= flushMs) this.#flushDue = true;
    this.#turnStarted = now;
  }

  #dropCancelled(): void {
    while (this.#heap[0]?.cancelled) this.#pop();
  }

  #before(a: Timer, b: Timer): boolean {
    return a.atMs < b.atMs || (a.atMs === b.atMs && a.order < b.order);
  }

  #push(timer: Timer): void {
    const heap = this.#heap;
    heap.push(timer);
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      const up = heap[parent] as Timer;
      if (!this.#before(timer, up)) break;
      heap[index] = up;
      index = parent;
    }
    heap[index] = timer;
  }

  #pop(): Timer {
    const heap = this.#heap;
    const top = heap[0] as Timer;
    const last = heap.pop() as Timer;
    if (heap.length > 0) {
      let index = 0;
      for (;;) {
        const left = 2 * index + 1;
        if (left >= heap.length) break;
        const right = left + 1;
        const child =
          right < heap.length && this.#before(heap[right] as Timer, heap[left] as Timer) ? right : left;
        if (!this.#before(heap[child] as Timer, last)) break;
        heap[index] = heap[child] as Timer;
        index = child;
      }
      heap[index] = last;
    }
    return top;
  }
}
