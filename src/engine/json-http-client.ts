/**
 * POST-JSON over keep-alive HTTP(S) for the engine clients: one agent (connection pool) per
 * client, one attempt per call with a timeout, cancellation by AbortSignal, and a cap on
 * requests in flight. Cancellation is a value (`{ status: 'aborted' }`); failures are thrown
 * as engine errors that say whether they are `retryable` (connection errors, timeouts, 5xx,
 * 429 with its `Retry-After`). Retrying is the caller's decision (see `retryAdvice`), so a
 * router can send the retry to another replica.
 * Credentials in `headers` never reach an error: a server that echoes the key in its error
 * body has it replaced by `[redacted]`.
 */
import http from 'node:http';
import https from 'node:https';
import { ConcurrencyLimiter, LimiterAbortedError } from './concurrency-limiter.ts';
import {
  EngineBadResponseError,
  EngineHttpError,
  EngineTimeoutError,
  EngineUnavailableError,
} from './engine-errors.ts';

export type JsonHttpClientOptions = {
  /** Base URL of the server, e.g. `http://127.0.0.1:30000`. */
  baseUrl: string;
  /** Limit for the request, from sending to the last byte of the answer. */
  timeoutMs: number;
  /** Requests in flight at once (also the socket pool size). */
  maxConcurrency: number;
  headers?: Record<string, string>;
  /** Wall-clock milliseconds, to read an HTTP-date `Retry-After`; default `Date.now`. */
  now?: () => number;
};

export type PostResult = { status: 'ok'; body: unknown } | { status: 'aborted' };

/** An answer as it came, any status: for routes whose errors are answers (SGLang's `/flush_cache`). */
export type RawAnswer = { statusCode: number; text: string };

type Attempt =
  | { kind: 'response'; statusCode: number; text: string; retryAfter: string | undefined }
  | { kind: 'connection-error'; error: Error }
  | { kind: 'timeout'; error: Error }
  | { kind: 'aborted' };

const RETRYABLE_CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
]);

/** A small JSON-over-HTTP client with pooling, timeouts, retries, cancellation and a concurrency cap. */
export class JsonHttpClient {
  readonly baseUrl: string;
  readonly #options: JsonHttpClientOptions;
  readonly #agent: http.Agent;
  readonly #limiter: ConcurrencyLimiter;
  readonly #now: () => number;
  readonly #secrets: string[];

  constructor(options: JsonHttpClientOptions) {
    this.#options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    const isHttps = this.baseUrl.startsWith('https:');
    const agentOptions = { keepAlive: true, maxSockets: options.maxConcurrency, keepAliveMsecs: 10_000 };
    this.#agent = isHttps ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
    this.#limiter = new ConcurrencyLimiter(options.maxConcurrency);
    this.#now = options.now ?? Date.now;
    this.#secrets = credentialsIn(options.headers ?? {});
  }

  /** Requests currently holding a concurrency slot. */
  get inFlight(): number {
    return this.#limiter.active;
  }

  /** POSTs `body` as JSON to `path` and parses the JSON answer; `timeoutMs` overrides the client's. */
  async postJson(path: string, body: unknown, signal?: AbortSignal, timeoutMs?: number): Promise<PostResult> {
    const url = new URL(this.baseUrl + path);
    const payload = JSON.stringify(body);
    let release: () => void;
    try {
      release = await this.#limiter.acquire(signal);
    } catch (error) {
      if (error instanceof LimiterAbortedError) return { status: 'aborted' };
      throw error;
    }
    try {
      return await this.#postOnce(url, payload, signal, timeoutMs ?? this.#options.timeoutMs);
    } finally {
      release();
    }
  }

  /**
   * Sends one request and returns the answer whatever its status (its body as text, credentials
   * redacted); throws only when no answer came (connection error, timeout, cancellation).
   */
  async request(method: 'GET' | 'POST', path: string, body?: unknown): Promise<RawAnswer> {
    const url = new URL(this.baseUrl + path);
    const release = await this.#limiter.acquire();
    try {
      const where = url.toString();
      const result = await this.#sendOnce(
        url,
        body === undefined ? '' : JSON.stringify(body),
        undefined,
        this.#options.timeoutMs,
        method,
      );
      if (result.kind === 'timeout')
        throw new EngineTimeoutError(where, this.#options.timeoutMs, { cause: result.error });
      if (result.kind === 'connection-error') {
        throw new EngineUnavailableError(where, isRetryableConnectionError(result.error), {
          cause: result.error,
        });
      }
      if (result.kind === 'aborted') throw new EngineUnavailableError(where, true);
      return { statusCode: result.statusCode, text: this.#redact(result.text) };
    } finally {
      release();
    }
  }

  /** Closes pooled sockets. In-flight requests are not affected. */
  close(): void {
    this.#agent.destroy();
  }

  async #postOnce(
    url: URL,
    payload: string,
    signal: AbortSignal | undefined,
    timeoutMs: number,
  ): Promise<PostResult> {
    const where = url.toString();
    const result = await this.#sendOnce(url, payload, signal, timeoutMs);
    if (result.kind === 'aborted') return { status: 'aborted' };
    if (result.kind === 'timeout') {
      throw new EngineTimeoutError(where, timeoutMs, { cause: result.error });
    }
    if (result.kind === 'connection-error') {
      throw new EngineUnavailableError(where, isRetryableConnectionError(result.error), {
        cause: result.error,
      });
    }
    if (result.statusCode >= 400 || result.statusCode < 200) {
      throw new EngineHttpError(where, result.statusCode, this.#redact(result.text), {
        retryAfterMs: retryAfterMs(result.retryAfter, this.#now()),
      });
    }
    try {
      return { status: 'ok', body: JSON.parse(result.text) };
    } catch (error) {
      throw new EngineBadResponseError(
        where,
        `body is not JSON: ${this.#redact(result.text).slice(0, 200)}`,
        {
          cause: error,
        },
      );
    }
  }

  /** The text with every credential sent in the headers replaced. */
  #redact(text: string): string {
    let redacted = text;
    for (const secret of this.#secrets) redacted = redacted.replaceAll(secret, '[redacted]');
    return redacted;
  }

  #sendOnce(
    url: URL,
    payload: string,
    signal: AbortSignal | undefined,
    timeoutMs: number,
    method: 'GET' | 'POST' = 'POST',
  ): Promise<Attempt> {
    if (signal?.aborted) return Promise.resolve({ kind: 'aborted' });
    const transport = url.protocol === 'https:' ? https : http;
    return new Promise<Attempt>((resolve) => {
      let settled = false;
      const finish = (attempt: Attempt) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(attempt);
      };
      const request = transport.request(url, {
        method,
        agent: this.#agent,
        headers: {
          ...(method === 'POST'
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
            : {}),
          accept: 'application/json',
          ...this.#options.headers,
        },
      });
      const onAbort = () => {
        finish({ kind: 'aborted' });
        request.destroy();
      };
      const timer = setTimeout(() => {
        finish({ kind: 'timeout', error: new Error(`no complete answer within ${timeoutMs} ms`) });
        request.destroy();
      }, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      request.on('error', (error) => finish({ kind: 'connection-error', error }));
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', (error) => finish({ kind: 'connection-error', error }));
        response.on('end', () =>
          finish({
            kind: 'response',
            statusCode: response.statusCode ?? 0,
            text: Buffer.concat(chunks).toString('utf8'),
            retryAfter: response.headers['retry-after'],
          }),
        );
      });
      request.end(method === 'POST' ? payload : undefined);
    });
  }
}

/** Values of credential headers (`authorization` without its scheme, `api-key`, `x-api-key`). */
function credentialsIn(headers: Record<string, string>): string[] {
  const secrets: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (!/^(authorization|(x-)?api-key)$/i.test(name)) continue;
    const credential = value.replace(/^(Bearer|Basic)\s+/i, '');
    if (credential.length > 0) secrets.push(credential);
  }
  return secrets;
}

function isRetryableConnectionError(error: Error): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== undefined && RETRYABLE_CONNECTION_CODES.has(code)) return true;
  return error.message === 'socket hang up';
}

/** `Retry-After` (seconds, or an HTTP date) as milliseconds from now; null when absent or unreadable. */
export function retryAfterMs(header: string | undefined, nowMs: number): number | null {
  if (header === undefined || header.trim() === '') return null;
  const trimmed = header.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}
