/**
 * Which `killed` outcomes mean the cell never ran: the session had expired (local pool's idle
 * sweep: `session-expired`) or its node no longer knew it (HTTP 404: `session-lost`), or the
 * node was down before the call was sent (known down, or the connection refused: `session-lost`
 * too). No code ran, so a caller that can rebuild the state (the agent replays the trajectory's
 * earlier cells, on another node where this one is down) may do so and run the cell again,
 * instead of telling the model that its code was killed. `node-lost` and other kills may have
 * happened mid-run: not these.
 */
import type { ExecutionOutcome } from './types.ts';

export function codeDidNotRun(outcome: ExecutionOutcome): boolean {
  return outcome.status === 'killed' && /^(session-expired|session-lost)\b/.test(outcome.reason);
}
