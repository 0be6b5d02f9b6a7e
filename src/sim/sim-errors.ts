/**
 * Errors the simulator throws: a workload file that does not validate, a simulation that can
 * make no progress (every task waits and no virtual timer is pending), and one whose steps
 * keep drawing problems without keeping groups (every group dropped: all answers alike, or
 * every trajectory cut by its budget).
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

/** The run drew far more problems than its steps could need: groups are not being kept. */
export class SimulationNoProgressError extends AgentMathError {
  constructor(problems: number, steps: number, stepPrompts: number) {
    super(
      'SIM_NO_PROGRESS',
      `simulation drew ${problems} problems for ${steps} steps of ${stepPrompts} groups without finishing: ` +
        'groups are (almost) never kept. Check the workload: a budgets.maxTokens below the prompt plus the response ' +
        'cuts every trajectory, and a solveRate of 0 or 1 makes every group all-equal',
    );
  }
}
