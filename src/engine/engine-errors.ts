/**
 * Errors thrown by engine clients, each with a stable `code`. A cancelled request is not an
 * error: it resolves with `finishReason: 'abort'`. These are for broken infrastructure and
 * for requests the server refuses.
 */
import { AgentMathError } from '../shared/agentmath-error.ts';

/** The server could not be reached (refused, reset, DNS) after every retry. */
export class EngineUnavailableError extends AgentMathError {
  readonly url: string;
  constructor(url: string, attempts: number, options?: { cause?: unknown }) {
    super(
      'ENGINE_UNAVAILABLE',
      `engine at ${url} is unreachable after ${attempts} attempt(s); is the server running and the url right?`,
      options,
    );
    this.url = url;
  }
}

/** A request took longer than its timeout; it is not retried (the server may still be busy with it). */
export class EngineTimeoutError extends AgentMathError {
  readonly timeoutMs: number;
  constructor(url: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(
      'ENGINE_TIMEOUT',
      `engine request to ${url} timed out after ${timeoutMs} ms; raise timeoutMs or lower maxNewTokens`,
      options,
    );
    this.timeoutMs = timeoutMs;
  }
}

/** The server answered with an HTTP error status (4xx: not retried; 5xx: after every retry). */
export class EngineHttpError extends AgentMathError {
  readonly status: number;
  readonly body: string;
  constructor(url: string, status: number, body: string, options?: { cause?: unknown }) {
    super(
      status >= 500 ? 'ENGINE_HTTP_5XX' : 'ENGINE_HTTP_4XX',
      `engine at ${url} answered HTTP ${status}: ${body.slice(0, 500)}`,
      options,
    );
    this.status = status;
    this.body = body;
  }
}

/** The server answered 2xx with a body that is not the expected JSON shape. */
export class EngineBadResponseError extends AgentMathError {
  constructor(url: string, detail: string, options?: { cause?: unknown }) {
    super('ENGINE_BAD_RESPONSE', `engine at ${url} sent an unexpected response: ${detail}`, options);
  }
}

/** The request cannot be sent as given (e.g. a text API without `promptText`). */
export class EngineBadRequestError extends AgentMathError {
  constructor(message: string) {
    super('ENGINE_BAD_REQUEST', message);
  }
}

/** Engine options failed validation. */
export class EngineConfigError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ENGINE_CONFIG_INVALID', message, options);
  }
}
