/**
 * The simulated model: what every replica "samples". It reads the problem number from the
 * prompt, gives each new trajectory (a new `sessionId`) the plan the workload drew for that
 * problem and sample, and continues the planned response from where the trajectory is. All
 * replicas share one policy, so a trajectory moved to another replica goes on with the same
 * response; the replicas differ only in their caches and their time.
 *
 * It also knows, per trajectory, how much of a prompt the trajectory has already had computed
 * somewhere (the prompt and output of its last request): the rest is new (the first prompt,
 * tool output), and anything computed beyond the new part is re-prefill.
 */
import type { GenerateRequest } from '../engine/types.ts';
import {
  type ResponseLayout,
  responseLayout,
  responseUntilStop,
  type TrajectoryPlan,
} from './trajectory-plan.ts';

/** The prompt of simulated problem `index` starts with this text; padding follows. */
export function problemHeader(index: number): string {
  return `simulated problem ${index}.`;
}

const HEADER_PATTERN = /simulated problem (\d+)\./;

/** The draw index a simulated problem's text names (`problemHeader`), or null. */
export function simulatedProblemIndex(text: string): number | null {
  const match = HEADER_PATTERN.exec(text);
  return match === null ? null : Number(match[1]);
}
const HEADER_SCAN_TOKENS = 256;

type SessionState = {
  plan: TrajectoryPlan;
  layout: ResponseLayout;
  /** Model tokens already returned to the trajectory. */
  cursor: number;
  /** Prompt plus output length of the last completed request: computed before. */
  computedTokens: number;
};

/** The next output for a request; `commit` records it once the request completes. */
export type PolicyTurn = {
  tokenIds: number[];
  text: string;
  finishReason: 'stop' | 'length';
  matchedStop: string | null;
  /** Prompt tokens this trajectory has never had computed (first prompt, tool output). */
  newPromptTokens: number;
  commit(): void;
};

export type SimulatedPolicyOptions = {
  /** The plan for sample `sample` of problem `problem` (deterministic). */
  planFor: (problem: number, sample: number) => TrajectoryPlan;
  /** Reads prompt tokens back as text (the byte-level tokenizer's decode). */
  decode: (tokenIds: readonly number[]) => string;
};

export class SimulatedPolicy {
  readonly #planFor: SimulatedPolicyOptions['planFor'];
  readonly #decode: SimulatedPolicyOptions['decode'];
  readonly #sessions = new Map<string, SessionState>();
  readonly #samplesSeen = new Map<number, number>();
  /** The policy version engines report (the caller moves it on after each training step). */
  version = 0;

  constructor({ planFor, decode }: SimulatedPolicyOptions) {
    this.#planFor = planFor;
    this.#decode = decode;
  }

  /** The plan the trajectory with this session id follows (undefined before its first request). */
  planOf(sessionId: string): TrajectoryPlan | undefined {
    return this.#sessions.get(sessionId)?.plan;
  }

  /** The continuation of a request's trajectory (not yet committed). */
  turn(request: GenerateRequest): PolicyTurn {
    const prompt = request.promptTokenIds;
    const session = this.#session(request);
    const { layout } = session;
    const from = session.cursor;
    const to = Math.min(layout.length, from + Math.max(0, request.maxNewTokens));
    const { text, matchedStop } = responseUntilStop(layout, from, to, request.stop);
    const end = from + text.length;
    const finishReason = matchedStop !== null || end === layout.length ? 'stop' : 'length';
    // Every character of the plan is ASCII: under the byte-level tokenizer its id is its code.
    const tokenIds = new Array<number>(text.length);
    for (let index = 0; index < text.length; index++) tokenIds[index] = text.charCodeAt(index);
    const newPromptTokens = Math.max(0, prompt.length - session.computedTokens);
    return {
      tokenIds,
      text,
      finishReason,
      matchedStop,
      newPromptTokens,
      commit: () => {
        session.cursor = end;
        session.computedTokens = prompt.length + tokenIds.length;
      },
    };
  }

  #session(request: GenerateRequest): SessionState {
    const id = request.sessionId;
    const known = id === undefined ? undefined : this.#sessions.get(id);
    // A prompt shorter than what was computed before means the trajectory started over.
    if (known !== undefined && request.promptTokenIds.length >= known.computedTokens) return known;
    const head = this.#decode(request.promptTokenIds.slice(0, HEADER_SCAN_TOKENS));
    const match = HEADER_PATTERN.exec(head);
    if (match === null) {
      throw new Error(
        `simulated engine: the prompt does not name a simulated problem ("${head.slice(0, 60)}…")`,
      );
    }
    const problem = Number(match[1]);
    const sample = this.#samplesSeen.get(problem) ?? 0;
    this.#samplesSeen.set(problem, sample + 1);
    const plan = this.#planFor(problem, sample);
    const state: SessionState = {
      plan,
      layout: responseLayout(plan),
      cursor: 0,
      computedTokens: 0,
    };
    if (id !== undefined) this.#sessions.set(id, state);
    return state;
  }
}
