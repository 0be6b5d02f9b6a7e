/**
 * Errors the simulator throws: a workload file that does not validate, and a simulation that
 * can make no progress (every task waits and no virtual timer is pending).
 */
import { AgentMathError } from '../shared/agentmath-error.ts';

/** A workload file or object is invalid; the message names the file and field. */
export class WorkloadInvalidError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SIM_WORKLOAD_INVALID', message, options);
  }
}

/** Every task waits, no virtual timer is pending, and the simulated run has not finished. */
export class SimulationStalledError extends AgentMathError {
  constructor(atMs: number) {
    super(
      'SIM_STALLED',
      `simulation stalled at virtual time ${atMs.toFixed(1)} ms: every task waits and nothing is scheduled`,
    );
  }
}
