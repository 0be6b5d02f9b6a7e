/**
 * The one sandbox session of a trajectory. It is opened at the first code block (a
 * trajectory that never runs code never holds one) and released at the end: closed, or
 * parked when the trajectory stopped at its segment budget and the caller gave a park.
 *
 * Restoring after a segment: a resumed trajectory whose session was closed gets a new one,
 * into which the earlier calls' code is replayed (output discarded) before the next call.
 * Only calls after the last reset are replayed (a `killed` outcome that ran, which told the model its
 * state was lost, or `memory-exceeded`, after which the local pool starts a fresh worker), and
 * calls that timed out are skipped. Replay re-runs
 * code, so state that depends on time or unseeded randomness may differ; park the session
 * when that matters.
 *
 * A session that throws (a lost node, a crashed pool) is replaced by a new one and the call
 * reports `killed`: the model is told its state is gone and the loop goes on.
 *
 * A session that refuses a call before running it (`codeDidNotRun`: it expired while parked or
 * idle, or its node forgot it) is replaced by a new one into which every earlier call of the
 * trajectory is replayed, and the call runs there: the model never reads `killed` for code that
 * did not run.
 *
 * A full provider (`SANDBOX_POOL_FULL`) is a queue, not an outage: the longest-parked session is
 * evicted to make room when a park was given, and otherwise the trajectory waits for a slot and
 * asks again — as it waits on the engine — until it gets one or its signal aborts. Sessions are
 * held by trajectories that go on and by parks, so a slot frees; failing the trajectory instead
 * would throw away a sample for a wait (and, since only trajectories that run code wait, bias
 * a group towards those that do not).
 */
import { codeDidNotRun } from '../sandbox/code-did-not-run.ts';
import type { ExecutionOutcome, SandboxProvider, SandboxSession } from '../sandbox/types.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { type Clock, systemClock } from '../shared/clock.ts';
import type { ToolCall } from '../trajectory/trajectory.ts';
import { SandboxSessionError } from './agent-errors.ts';
import { untilAborted } from './engine-call.ts';
import type { SessionPark } from './session-park.ts';

/** Pause between asks to a full provider that refused at once (the local pool waits on its own). */
const POOL_FULL_RETRY_MS = 100;

export type TrajectorySessionOptions = {
  provider: SandboxProvider;
  /** A parked session to continue in, or null. */
  session: SandboxSession | null;
  /**
   * The trajectory's calls, read live (the loop appends to this array): those before this
   * segment are replayed into a new session; all of them when a session has to be rebuilt.
   */
  priorCalls: readonly ToolCall[];
  /** Evicted from when the provider is full (see `SessionPark`). */
  park?: SessionPark;
  timeoutMs: number;
  /** Measures the replay; default `systemClock`. */
  clock?: Clock;
  onRestore?: (replayedCalls: number, ms: number) => void;
};

export class TrajectorySession {
  readonly #provider: SandboxProvider;
  readonly #timeoutMs: number;
  readonly #clock: Clock;
  readonly #onRestore: TrajectorySessionOptions['onRestore'];
  readonly #calls: readonly ToolCall[];
  readonly #park: SessionPark | undefined;
  #session: SandboxSession | null;
  #pendingReplay: readonly ToolCall[];

  constructor({
    provider,
    session,
    priorCalls,
    timeoutMs,
    clock = systemClock,
    park,
    onRestore,
  }: TrajectorySessionOptions) {
    this.#provider = provider;
    this.#calls = priorCalls;
    this.#park = park;
    this.#clock = clock;
    this.#session = session;
    this.#timeoutMs = timeoutMs;
    this.#onRestore = onRestore;
    this.#pendingReplay = session === null ? callsToReplay(priorCalls) : [];
  }

  /**
   * Runs one code cell. Throws `SandboxSessionError` only when no session can be opened; the
   * caller's abort rejects with the signal's reason.
   */
  async execute(code: string, signal: AbortSignal | undefined): Promise<ExecutionOutcome> {
    // Empty code runs nothing: Python would print nothing, so no round trip is made.
    if (code.trim() === '') return { status: 'ok', stdout: '', stderr: '', ms: 0 };
    let session = await this.#ready(signal);
    try {
      let outcome = await this.#run(session, code, signal);
      if (codeDidNotRun(outcome)) {
        // Nothing ran: rebuild the state in a new session and run the cell there.
        this.#session = null;
        await closeQuietly(session);
        this.#pendingReplay = callsToReplay(this.#calls);
        session = await this.#ready(signal);
        outcome = await this.#run(session, code, signal);
      }
      return outcome;
    } catch (error) {
      if (signal?.aborted) throw error;
      this.#session = null;
      await closeQuietly(session);
      const message = error instanceof Error ? error.message : String(error);
      return { status: 'killed', reason: `sandbox session lost: ${message}` };
    }
  }

  #run(session: SandboxSession, code: string, signal: AbortSignal | undefined): Promise<ExecutionOutcome> {
    const running = session.execute(code, { timeoutMs: this.#timeoutMs });
    return signal === undefined ? running : untilAborted(running, signal);
  }

  /** Closes the session, or parks it under the trajectory's id. */
  async release(park: { park: SessionPark; trajectoryId: string } | null): Promise<void> {
    const session = this.#session;
    this.#session = null;
    if (session === null) return;
    if (park !== null) await park.park.put(park.trajectoryId, session);
    else await closeQuietly(session);
  }

  async #ready(signal: AbortSignal | undefined): Promise<SandboxSession> {
    if (this.#session !== null) return this.#session;
    let session: SandboxSession;
    try {
      session = await this.#open(signal);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new SandboxSessionError(`could not open a sandbox session: ${message}`, { cause: error });
    }
    this.#session = session;
    const replay = this.#pendingReplay;
    this.#pendingReplay = [];
    if (replay.length > 0) {
      const started = this.#clock.now();
      for (const call of replay) await session.execute(call.code, { timeoutMs: this.#timeoutMs });
      this.#onRestore?.(replay.length, this.#clock.now() - started);
    }
    return session;
  }

  /**
   * A new session. When the provider is full, parked sessions make room, oldest first; with
   * none to evict, the trajectory waits for a slot (see the module comment).
   */
  async #open(signal: AbortSignal | undefined): Promise<SandboxSession> {
    for (;;) {
      try {
        return await this.#provider.openSession();
      } catch (error) {
        const full = error instanceof AgentMathError && error.code === 'SANDBOX_POOL_FULL';
        if (!full || signal?.aborted) throw error;
        if (this.#park !== undefined && (await this.#park.evictOldest())) continue;
        await this.#clock.sleep(POOL_FULL_RETRY_MS, signal);
      }
    }
  }
}

/** The calls whose effects a fresh session needs, in order. */
export function callsToReplay(calls: readonly ToolCall[]): ToolCall[] {
  let start = 0;
  calls.forEach((call, index) => {
    if (call.outcome.status === 'killed' || call.outcome.status === 'memory-exceeded') start = index + 1;
  });
  return calls
    .slice(start)
    .filter(
      (call) => call.code.trim() !== '' && (call.outcome.status === 'ok' || call.outcome.status === 'error'),
    );
}

async function closeQuietly(session: SandboxSession): Promise<void> {
  try {
    await session.close();
  } catch {
    // The session is being discarded; reclaiming it is the provider's job.
  }
}
