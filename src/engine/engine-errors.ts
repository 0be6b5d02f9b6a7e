/**
 * Errors thrown by engine clients, each with a stable `code` and `retryable`: whether the same
 * request may succeed if sent again (here or to another replica). A client makes one attempt
 * per call; the caller that owns retries (the agent's engine call, or a router that fails over)
 * reads `retryable` and `retryAfterMs` through `retryAdvice`. A cancelled request is not an
 * error: it resolves with `finishReason: 'abort'`.
 */
import { AgentMathError } from '../shared/agentmath-error.ts';

/** The server could not be reached (refused, reset, DNS). Retryable for transient socket errors. */
export class EngineUnavailableError extends AgentMathError {
  readonly url: string;
  readonly retryable: boolean;
  constructor(url: string, retryable: boolean, options?: { cause?: unknown }) {
    const detail = options?.cause instanceof Error ? `: ${options.cause.message}` : '';
    super(
      'ENGINE_UNAVAILABLE',
      `engine at ${url} is unreachable${detail}; is the server running and the url right?`,
      options,
    );
    this.url = url;
    this.retryable = retryable;
  }
}

/** A request took longer than its timeout. Retryable: another attempt (or replica) may be faster. */
export class EngineTimeoutError extends AgentMathError {
  readonly retryable = true;
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

/**
 * The server answered with an HTTP error status. 5xx and 429 (rate limited) are retryable;
 * `retryAfterMs` is the server's `Retry-After`, when it sent one. Other 4xx are not.
 */
export class EngineHttpError extends AgentMathError {
  readonly status: number;
  readonly body: string;
  readonly retryable: boolean;
  readonly retryAfterMs: number | null;
  constructor(
    url: string,
    status: number,
    body: string,
    options?: { cause?: unknown; retryAfterMs?: number | null },
  ) {
    super(
      status >= 500 ? 'ENGINE_HTTP_5XX' : 'ENGINE_HTTP_4XX',
      `engine at ${url} answered HTTP ${status}: ${body.slice(0, 500)}`,
      options,
    );
    this.status = status;
    this.body = body;
    this.retryable = status >= 500 || status === 429;
    this.retryAfterMs = options?.retryAfterMs ?? null;
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

/**
 * Whether a failed engine call may be retried, and the least wait the server asked for. Errors
 * that carry no `retryable` field count as retryable unless their code says the request itself
 * is wrong (bad request, bad config): an engine that throws a plain error may be transient.
 */
export function retryAdvice(error: unknown): { retryable: boolean; retryAfterMs: number | null } {
  if (error instanceof AgentMathError) {
    const fields = error as AgentMathError & { retryable?: unknown; retryAfterMs?: unknown };
    const retryAfterMs = typeof fields.retryAfterMs === 'number' ? fields.retryAfterMs : null;
    if (typeof fields.retryable === 'boolean') return { retryable: fields.retryable, retryAfterMs };
    return { retryable: !NEVER_RETRYABLE.has(error.code), retryAfterMs };
  }
  return { retryable: true, retryAfterMs: null };
}

const NEVER_RETRYABLE = new Set(['ENGINE_BAD_REQUEST', 'ENGINE_CONFIG_INVALID']);
