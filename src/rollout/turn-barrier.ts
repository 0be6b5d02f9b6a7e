/**
 * The static synchronous mode's turn barrier: every trajectory of a round issues its
 * generation together, and the next turn starts only when every trajectory has finished the
 * generation and tool call of this one (it reaches the barrier again) or has left (finished or
 * parked). The engine wrapper `barrierEngine` makes each generate call wait at the barrier.
 */
import type { Engine, GenerateRequest, GenerateResult } from '../engine/types.ts';
import type { SandboxProvider, SandboxSession } from '../sandbox/types.ts';

export class TurnBarrier {
  #participants = 0;
  #waiting: Array<() => void> = [];
  /** Turns released so far. */
  turns = 0;

  /** Adds participants (also after others arrived: they wait for the newcomers too). */
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

/**
 * The sandbox as one trajectory of a synchronous round sees it: while it waits for a session
 * (a full pool queues it) it is out of the round, so the trajectories holding the sessions can
 * go on to their next turn and, finishing, free a slot; it rejoins once it has its session.
 * Without this, a round with more code-running trajectories than sandbox slots deadlocks: the
 * holders wait at the barrier for the waiters, the waiters for the holders' slots.
 */
export function barrierSandbox(sandbox: SandboxProvider, barrier: TurnBarrier): SandboxProvider {
  return new Proxy(sandbox, {
    get(target, property, receiver) {
      if (property !== 'openSession') return Reflect.get(target, property, receiver);
      return async (...args: unknown[]): Promise<SandboxSession> => {
        barrier.leave();
        try {
          return await (target.openSession as (...a: unknown[]) => Promise<SandboxSession>)(...args);
        } finally {
          barrier.join();
        }
      };
    },
  });
}
