/**
 * Errors the agent loop throws. Only caller mistakes are thrown (bad options, resuming a
 * trajectory that cannot be resumed); a failing engine or sandbox ends the trajectory with
 * finish reason `error` and the failure's code instead.
 */
import { AgentMathError } from '../shared/agentmath-error.ts';

/** An option of `runAgent` / `resumeAgent` is invalid; the message names the field. */
export class AgentConfigError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('AGENT_CONFIG_INVALID', message, options);
  }
}

/** `resumeAgent` was given a trajectory that did not stop at a segment budget. */
export class TrajectoryNotResumableError extends AgentMathError {
  constructor(trajectoryId: string, reason: string) {
    super(
      'TRAJECTORY_NOT_RESUMABLE',
      `trajectory ${trajectoryId} cannot be resumed: ${reason} (only trajectories that stopped with finish reason "segment-budget" can)`,
    );
  }
}

/** The engine failed on every attempt; carried into the trajectory's `finish.error`. */
export class EngineFailedError extends AgentMathError {
  constructor(engineName: string, attempts: number, options: { cause: unknown }) {
    const cause = options.cause;
    const detail =
      cause instanceof AgentMathError
        ? `[${cause.code}] ${cause.message}`
        : cause instanceof Error
          ? cause.message
          : String(cause);
    super('ENGINE_FAILED', `engine ${engineName} failed ${attempts} time(s); last error: ${detail}`, options);
  }
}

/** The engine answered without token ids in a token-level trajectory that already has some. */
export class EngineTokensMissingError extends AgentMathError {
  constructor(engineName: string) {
    super(
      'ENGINE_TOKENS_MISSING',
      `engine ${engineName} returned no token ids in the middle of a token-level trajectory`,
    );
  }
}

/** A sandbox session could not be opened (or reopened after it was lost). */
export class SandboxSessionError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SANDBOX_SESSION_FAILED', message, options);
  }
}
