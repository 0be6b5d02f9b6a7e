/**
 * The static synchronous mode's turn barrier: every trajectory of a round issues its
 * generation together, and the next turn starts only when every trajectory has finished the
 * generation and tool call of this one (it reaches the barrier again) or has left (finished or
 * parked). The engine wrapper `barrierEngine` makes each generate call wait at the barrier.
 */
import type { Engine, GenerateRequest, GenerateResult } from '../engine/types.ts';

export class TurnBarrier {
  #participants = 0;
  #waiting: Array<() => void> = [];
  /** Turns released so far. */
  turns = 0;

  /** Adds participants (before any of them arrives). */
  join(count = 1): void {
    this.#participants += count;
  }

  /** Resolves when every participant has arrived or left. */
  arrive(): Promise<void> {
    const promise = new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#releaseIfComplete();
    return promise;
  }

  /** A participant is done for this round. */
  leave(): void {
    this.#participants--;
    this.#releaseIfComplete();
  }

  #releaseIfComplete(): void {
    if (this.#waiting.length === 0 || this.#waiting.length < this.#participants) return;
    const waiting = this.#waiting;
    this.#waiting = [];
    this.turns++;
    for (const resolve of waiting) resolve();
  }
}

/** The engine as one trajectory of a synchronous round sees it: each call waits for the turn. */
export function barrierEngine(engine: Engine, barrier: TurnBarrier): Engine {
  return {
    name: engine.name,
    async generate(request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
      await barrier.arrive();
      return engine.generate(request, signal);
    },
  };
}
