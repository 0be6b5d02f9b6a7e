/**
 * Where sandbox sessions wait between the segments of a partial rollout. When a trajectory
 * stops at its segment budget and the caller gave a park, its open session is left here
 * (Python state intact) instead of being closed; `resumeAgent` takes it back. Without a park,
 * or when the session is gone, resume opens a new session and replays the earlier code.
 * The park's owner closes whatever is left (`closeAll`) when it stops resuming.
 */
import type { SandboxSession } from '../sandbox/types.ts';

export class SessionPark {
  readonly #sessions = new Map<string, SandboxSession>();

  /** Parks a trajectory's session; a session already parked for it is closed. */
  async put(trajectoryId: string, session: SandboxSession): Promise<void> {
    const previous = this.#sessions.get(trajectoryId);
    this.#sessions.set(trajectoryId, session);
    if (previous !== undefined && previous !== session) await previous.close();
  }

  /** Removes and returns the parked session, or null. */
  take(trajectoryId: string): SandboxSession | null {
    const session = this.#sessions.get(trajectoryId) ?? null;
    this.#sessions.delete(trajectoryId);
    return session;
  }

  get size(): number {
    return this.#sessions.size;
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
