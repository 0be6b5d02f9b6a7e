/**
 * The client of one `agentmath sandbox serve` node: the same `SandboxProvider` interface as
 * the local pool, over HTTP with keep-alive. Every request has a timeout; only GET and DELETE
 * are retried. A lost node makes a session's call report `killed` with reason `node-lost`, or
 * `session-lost` when the node refused the connection (the call was not sent, nothing ran).
 */
import http from 'node:http';
import { executionOutcomeSchema } from '../shared/execution-outcome.ts';
import { errorMessage, requestJson } from './http-json-request.ts';
import { type RemoteBinding, RemoteSandboxSession } from './remote-sandbox-session.ts';
import { SandboxPoolFullError, SandboxRequestError, SandboxUnavailableError } from './sandbox-errors.ts';
import type { ExecuteOptions, ExecutionOutcome, SandboxProvider } from './types.ts';

export type SandboxClientOptions = {
  /** Base URL of the node, e.g. http://127.0.0.1:8470 */
  url: string;
  /** Bearer token; defaults to AGENTMATH_SANDBOX_TOKEN. */
  token?: string;
  /** Timeout of requests other than execute. */
  requestTimeoutMs?: number;
  /** Execute requests wait for the call's own timeout plus this margin. */
  executeMarginMs?: number;
  /** The call timeout assumed when a call sets none (the node's default). */
  defaultCallTimeoutMs?: number;
  /** Called when the node cannot be reached (the cluster client marks it down). */
  onUnavailable?: (error: SandboxUnavailableError) => void;
};

/** What `GET /v1/health` answers. */
export type SandboxNodeHealth = {
  status: 'ok';
  sessions: number;
  maxSessions: number;
  idleWorkers: number;
  startingWorkers: number;
  cgroups: boolean;
};

export class SandboxClient implements SandboxProvider {
  readonly url: string;
  readonly #token: string | undefined;
  readonly #agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  readonly #requestTimeoutMs: number;
  readonly #executeMarginMs: number;
  readonly #defaultCallTimeoutMs: number;
  readonly #onUnavailable: (error: SandboxUnavailableError) => void;

  constructor(options: SandboxClientOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.#token = options.token ?? process.env.AGENTMATH_SANDBOX_TOKEN;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 15_000;
    this.#executeMarginMs = options.executeMarginMs ?? 15_000;
    this.#defaultCallTimeoutMs = options.defaultCallTimeoutMs ?? 10_000;
    this.#onUnavailable = options.onUnavailable ?? (() => {});
  }

  /** The node's health and load; throws `SandboxUnavailableError` when it does not answer. */
  async health(timeoutMs = this.#requestTimeoutMs): Promise<SandboxNodeHealth> {
    const response = await this.#request('GET', '/v1/health', undefined, timeoutMs);
    if (response.status !== 200) this.#fail(response.status, response.body);
    return response.body as SandboxNodeHealth;
  }

  /** Opens a session on this node. */
  async openSession(): Promise<RemoteSandboxSession> {
    const binding = await this.bind();
    return new RemoteSandboxSession(binding.id, binding, { open: () => this.bind() });
  }

  /** @internal Opens a remote session and returns the handle a `RemoteSandboxSession` uses. */
  async bind(): Promise<RemoteBinding & { id: string }> {
    const response = await this.#request('POST', '/v1/sessions', {}, this.#requestTimeoutMs);
    if (response.status !== 201) this.#fail(response.status, response.body);
    const id = (response.body as { id?: unknown }).id;
    if (typeof id !== 'string')
      throw new SandboxUnavailableError(this.url, 'POST /v1/sessions answered without an id');
    const path = `/v1/sessions/${encodeURIComponent(id)}`;
    return {
      id,
      node: this.url,
      execute: (code, options) => this.#execute(path, code, options),
      delete: async () => {
        await this.#request('DELETE', path, undefined, this.#requestTimeoutMs);
      },
    };
  }

  async #execute(path: string, code: string, options: ExecuteOptions): Promise<ExecutionOutcome> {
    const body = options.timeoutMs === undefined ? { code } : { code, timeout_ms: options.timeoutMs };
    const waitMs = (options.timeoutMs ?? this.#defaultCallTimeoutMs) + this.#executeMarginMs;
    let response: Awaited<ReturnType<typeof requestJson>>;
    try {
      response = await this.#request('POST', `${path}/execute`, body, waitMs);
    } catch (error) {
      if (!(error instanceof SandboxUnavailableError)) throw error;
      // A refused connection sent nothing: the remote session is gone (its node is down) and
      // the cell never ran, so a caller may rebuild the state elsewhere (`codeDidNotRun`).
      if ((error.cause as NodeJS.ErrnoException | undefined)?.code === 'ECONNREFUSED') {
        return {
          status: 'killed',
          reason: `session-lost: ${error.message} (node down; the call was not sent)`,
        };
      }
      return { status: 'killed', reason: `node-lost: ${error.message}` };
    }
    if (response.status === 404) {
      return { status: 'killed', reason: `session-lost: ${errorMessage(response.body).message}` };
    }
    if (response.status !== 200) this.#fail(response.status, response.body);
    const parsed = executionOutcomeSchema.safeParse(response.body);
    if (!parsed.success)
      throw new SandboxUnavailableError(this.url, `malformed outcome: ${parsed.error.message}`);
    return parsed.data;
  }

  async #request(method: 'GET' | 'POST' | 'DELETE', path: string, body: unknown, timeoutMs: number) {
    try {
      return await requestJson({
        baseUrl: this.url,
        method,
        path,
        body,
        token: this.#token,
        timeoutMs,
        agent: this.#agent,
      });
    } catch (error) {
      if (error instanceof SandboxUnavailableError) this.#onUnavailable(error);
      throw error;
    }
  }

  #fail(status: number, body: unknown): never {
    const { code, message } = errorMessage(body);
    if (code === 'SANDBOX_POOL_FULL')
      throw new SandboxPoolFullError(`${this.url}: ${message.replace(/^sandbox pool is full: /, '')}`);
    if (status >= 400 && status < 500) throw new SandboxRequestError(this.url, status, message);
    throw new SandboxUnavailableError(this.url, `HTTP ${status}: ${message}`);
  }

  /** Closes idle keep-alive connections. Sessions are not closed: close them first. */
  async close(): Promise<void> {
    this.#agent.destroy();
  }
}
