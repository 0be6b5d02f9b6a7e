/**
 * Errors the sandbox throws. Outcomes of user code (timeouts, exceptions, kills) are values
 * (`ExecutionOutcome`); these are for a caller's misuse and for broken infrastructure.
 */
import { AgentMathError } from '../shared/agentmath-error.ts';

/** Every worker slot is taken by a session and none freed up in time (locally or on a node). */
export class SandboxPoolFullError extends AgentMathError {
  constructor(detail: string) {
    super('SANDBOX_POOL_FULL', `sandbox pool is full: ${detail}`);
  }
}

/** A node (or every node of a cluster) cannot be reached or answered with a server error. */
export class SandboxUnavailableError extends AgentMathError {
  constructor(endpoint: string, detail: string, options?: { cause?: unknown }) {
    super('SANDBOX_UNAVAILABLE', `sandbox at ${endpoint} is unavailable: ${detail}`, options);
  }
}

/** `execute` was called on a session after `close()`. */
export class SandboxSessionClosedError extends AgentMathError {
  constructor(id: string) {
    super('SANDBOX_SESSION_CLOSED', `sandbox session ${id} is closed; open a new session`);
  }
}

/** The pool was closed, or a worker could not start (bubblewrap or Python missing, bad option). */
export class SandboxStartError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SANDBOX_START_FAILED', message, options);
  }
}

/** A server answered a request with a 4xx: the request itself is wrong. */
export class SandboxRequestError extends AgentMathError {
  readonly httpStatus: number;
  constructor(endpoint: string, httpStatus: number, message: string) {
    super('SANDBOX_BAD_REQUEST', `sandbox at ${endpoint} rejected the request (${httpStatus}): ${message}`);
    this.httpStatus = httpStatus;
  }
}
