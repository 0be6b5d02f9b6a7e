/**
 * Where sandbox sessions wait between the segments of a partial rollout. When a trajectory
 * stops at its segment budget (or is paused) and the caller gave a park, its open session is
 * left here (Python state intact) instead of being closed; `resumeAgent` takes it back.
 *
 * The park has a capacity (`capacity`, default unlimited): parking beyond it closes the
 * session parked longest ago, and a trajectory whose session was evicted is rebuilt by replay
 * on resume. So parked sessions cannot hold every slot of a pool: give the park a capacity
 * below the pool's `maxWorkers`; a trajectory that finds the pool full also evicts the oldest
 * parked session (`evictOldest`) and tries again. A parked session the sandbox expired
 * meanwhile is detected at its first call (`codeDidNotRun`) and rebuilt by replay: the model
 * is never told `killed` for code that did not run. The park's owner closes whatever is left
 * (`closeAll`) when it stops resuming.
 */
import type { SandboxSession } from '../sandbox/types.ts';

export type SessionParkOptions = {
  /** Sessions kept at most; the longest-parked is closed beyond it. Default unlimited. */
  capacity?: number;
};

export class SessionPark {
  /** Insertion-ordered: the first entry was parked longest ago. */
  readonly #sessions = new Map<string, SandboxSession>();
  readonly #capacity: number;
  #evicted = 0;

  constructor({ capacity = Number.POSITIVE_INFINITY }: SessionParkOptions = {}) {
    if (!(capacity >= 0)) throw new RangeError(`SessionPark capacity must be >= 0, got ${capacity}`);
    this.#capacity = capacity;
  }

  /** Parks a trajectory's session; a session already parked for it is closed; evicts beyond capacity. */
  async put(trajectoryId: string, session: SandboxSession): Promise<void> {
    const previous = this.#sessions.get(trajectoryId);
    this.#sessions.delete(trajectoryId);
    this.#sessions.set(trajectoryId, session);
    if (previous !== undefined && previous !== session) await closeQuietly(previous);
    while (this.#sessions.size > this.#capacity) await this.evictOldest();
  }

  /** Removes and returns the parked session, or null (never parked, or evicted). */
  take(trajectoryId: string): SandboxSession | null {
    const session = this.#sessions.get(trajectoryId) ?? null;
    this.#sessions.delete(trajectoryId);
    return session;
  }

  /** Closes the session parked longest ago; false when the park is empty. */
  async evictOldest(): Promise<boolean> {
    const oldest = this.#sessions.entries().next();
    if (oldest.done === true) return false;
    const [trajectoryId, session] = oldest.value;
    this.#sessions.delete(trajectoryId);
    this.#evicted += 1;
    await closeQuietly(session);
    return true;
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** Sessions closed to make room so far. */
  get evicted(): number {
    return this.#evicted;
  }

  /** Closes every parked session (errors from single sessions are collected, not thrown early). */
  async closeAll(): Promise<void> {
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    const results = await Promise.allSettled(sessions.map((session) => session.close()));
    const failure = results.find((result) => result.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
  }
}

async function closeQuietly(session: SandboxSession): Promise<void> {
  try {
    await session.close();
  } catch {
    // The session is being discarded; reclaiming it is the provider's job.
  }
}
