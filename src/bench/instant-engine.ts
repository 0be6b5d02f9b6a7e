/**
 * An in-process engine that answers at once from a fixed list of turns, one list per
 * trajectory (keyed by `sessionId`). It exists to measure the agent loop's own cost: no
 * sampling, no network, nothing but handing back a fresh copy of precomputed tokens.
 */
import type { Engine, GenerateRequest, GenerateResult } from '../engine/types.ts';

export type InstantEngineOptions = {
  /** The results of calls 0, 1, 2, … of every trajectory; the last repeats. */
  turns: readonly GenerateResult[];
  /** Yield to the event loop before answering, as a real client does. Default true. */
  yieldFirst?: boolean;
  /** Milliseconds to wait before answering, per call (a serving engine's spread of latencies); default none. */
  latencyMs?: (() => number) | undefined;
};

export class InstantEngine implements Engine {
  readonly name = 'instant';
  readonly #turns: readonly GenerateResult[];
  readonly #yieldFirst: boolean;
  readonly #latencyMs: (() => number) | undefined;
  readonly #calls = new Map<string, number>();

  constructor({ turns, yieldFirst = true, latencyMs }: InstantEngineOptions) {
    if (turns.length === 0) throw new RangeError('InstantEngine needs at least one turn');
    this.#turns = turns;
    this.#yieldFirst = yieldFirst;
    this.#latencyMs = latencyMs;
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    const latency = this.#latencyMs?.() ?? 0;
    if (latency > 0) await new Promise<void>((resolve) => setTimeout(resolve, latency));
    else if (this.#yieldFirst) await new Promise<void>((resolve) => setImmediate(resolve));
    const key = request.sessionId ?? '';
    const call = this.#calls.get(key) ?? 0;
    const last = call >= this.#turns.length - 1;
    if (last) this.#calls.delete(key);
    else this.#calls.set(key, call + 1);
    const turn = this.#turns[Math.min(call, this.#turns.length - 1)]!;
    return {
      ...turn,
      tokenIds: turn.tokenIds === null ? null : turn.tokenIds.slice(),
      logprobs: turn.logprobs === null ? null : turn.logprobs.slice(),
    };
  }
}
