/**
 * The sandbox HTTP service (node:http, keep-alive) in front of a local pool:
 *   POST /v1/sessions → 201 {id}            POST /v1/sessions/{id}/execute {code, timeout_ms?}
 *   DELETE /v1/sessions/{id} → 204          GET /v1/health    GET /metrics (Prometheus)
 *   POST /run_code (SandboxFusion-compatible, one fresh session per request)
 * Errors are JSON `{error: {code, message}}` with a 4xx/5xx status; a bad request never
 * crashes the server. With a token set, every request needs `Authorization: Bearer <token>`.
 * Who may listen where follows `checkBindAuth`: a non-loopback host needs a token or `noAuth`,
 * and an empty token is refused before anything starts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { checkBindAuth, tokenMatches } from '../shared/bind-auth.ts';
import type { LocalSandboxOptions } from './local-sandbox-options.ts';
import { createLocalSandbox, type LocalSandboxPool, type LocalSandboxSession } from './local-sandbox-pool.ts';
import { runCodeRequestSchema, runCodeSandboxError, toRunCodeResponse } from './run-code-compat.ts';
import { SandboxMetrics } from './sandbox-metrics.ts';
import type { ExecutionOutcome } from './types.ts';

export type SandboxServerOptions = {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** When set, requests without `Authorization: Bearer <token>` get 401. Empty is refused. */
  token?: string | undefined;
  /** Serve a non-loopback host without a token (a warning is logged). Default false. */
  noAuth?: boolean;
  /** Serve this pool (the server will not close it), or build one from `poolOptions`. */
  pool?: LocalSandboxPool;
  poolOptions?: LocalSandboxOptions;
  maxBodyBytes?: number;
  log?: (line: string) => void;
};

export type SandboxServer = {
  url: string;
  pool: LocalSandboxPool;
  close(): Promise<void>;
};

const executeRequestSchema = z
  .object({
    code: z.string(),
    timeout_ms: z.number().int().positive().optional(),
    timeoutMs: z.number().int().positive().optional(),
  })
  .strict();

class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Starts the service; resolves once it listens (and the pool's warm set is ready). */
export async function startSandboxServer(options: SandboxServerOptions = {}): Promise<SandboxServer> {
  const { host = '127.0.0.1', port = 0, token, maxBodyBytes = 1024 * 1024 } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const warning = checkBindAuth({
    server: 'sandbox serve',
    host,
    token,
    tokenSource: '--token or AGENTMATH_SANDBOX_TOKEN',
    noAuth: options.noAuth ?? false,
    risk: 'runs any code in the sandbox',
  });
  if (warning !== null) log(warning);
  const ownsPool = options.pool === undefined;
  const pool = options.pool ?? createLocalSandbox(options.poolOptions ?? {}, { log });
  const sessions = new Map<string, LocalSandboxSession>();
  const metrics = new SandboxMetrics();

  const sweeper = setInterval(() => {
    for (const [id, session] of sessions) if (session.expired) sessions.delete(id);
  }, 5_000);
  sweeper.unref();

  const timed = async (session: LocalSandboxSession, code: string, timeoutMs: number | undefined) => {
    const started = performance.now();
    const outcome: ExecutionOutcome = await session.execute(
      code,
      timeoutMs === undefined ? {} : { timeoutMs },
    );
    const elapsedMs = performance.now() - started;
    metrics.recordCall(outcome.status, elapsedMs / 1000);
    return { outcome, elapsedMs };
  };

  const route = async (request: http.IncomingMessage, response: http.ServerResponse): Promise<void> => {
    if (token !== undefined && !tokenMatches(request.headers.authorization, token)) {
      throw new HttpError(401, 'UNAUTHORIZED', 'missing or wrong bearer token');
    }
    const url = new URL(request.url ?? '/', 'http://sandbox');
    const path = url.pathname;
    const method = request.method ?? 'GET';
    const sessionMatch = /^\/v1\/sessions\/([^/]+)(\/execute)?$/.exec(path);

    if (method === 'GET' && path === '/v1/health') {
      const stats = pool.stats();
      return sendJson(response, 200, {
        status: 'ok',
        sessions: stats.sessions,
        maxSessions: stats.maxSessions,
        idleWorkers: stats.idleWorkers,
        startingWorkers: stats.startingWorkers,
        cgroups: pool.cgroupsEnabled,
      });
    }
    if (method === 'GET' && path === '/metrics') {
      response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      response.end(metrics.render(pool.stats()));
      return;
    }
    const allowed = ROUTE_METHODS[path];
    if (allowed !== undefined && allowed !== method)
      throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${method} ${path}: use ${allowed}`);
    if (method === 'POST' && path === '/v1/sessions') {
      // An empty body or `{}`; anything else is a 400 before a session is opened.
      const text = await readBody(request, maxBodyBytes);
      if (text.trim() !== '') parseJson(text, openSessionRequestSchema);
      const session = await pool.openSession();
      sessions.set(session.id, session);
      return sendJson(response, 201, { id: session.id });
    }
    if (sessionMatch) {
      const id = decodeURIComponent(sessionMatch[1]!);
      const session = sessions.get(id);
      const execute = sessionMatch[2] !== undefined;
      if (execute && method !== 'POST')
        throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${method} ${path}: use POST`);
      if (!execute && method !== 'DELETE')
        throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${method} ${path}: use DELETE`);
      const body = execute ? parseJson(await readBody(request, maxBodyBytes), executeRequestSchema) : null;
      if (!session || session.expired) {
        sessions.delete(id);
        throw new HttpError(
          404,
          'SANDBOX_SESSION_NOT_FOUND',
          `no session ${id} (closed, expired or never opened)`,
        );
      }
      if (!body) {
        sessions.delete(id);
        await session.close();
        response.writeHead(204).end();
        return;
      }
      const { outcome } = await timed(session, body.code, body.timeout_ms ?? body.timeoutMs);
      return sendJson(response, 200, outcome);
    }
    if (method === 'POST' && path === '/run_code') {
      const body = parseJson(await readBody(request, maxBodyBytes), runCodeRequestSchema);
      let session: LocalSandboxSession;
      try {
        session = await pool.openSession();
      } catch (error) {
        return sendJson(
          response,
          503,
          runCodeSandboxError(error instanceof Error ? error.message : String(error)),
        );
      }
      try {
        const timeoutMs = Math.round((body.run_timeout ?? 10) * 1000);
        const { outcome, elapsedMs } = await timed(session, body.code, timeoutMs);
        return sendJson(response, 200, toRunCodeResponse(outcome, elapsedMs));
      } finally {
        void session.close();
      }
    }
    throw new HttpError(404, 'NOT_FOUND', `no route ${method} ${path}`);
  };

  const server = http.createServer({ keepAlive: true }, (request, response) => {
    route(request, response).catch((error: unknown) => {
      const failure = toHttpError(error);
      metrics.recordHttpError(failure.status);
      if (failure.status >= 500) log(`sandbox server: ${request.method} ${request.url}: ${failure.message}`);
      if (response.headersSent) {
        response.destroy();
        return;
      }
      if (failure.status === 413) response.setHeader('connection', 'close');
      sendJson(response, failure.status, { error: { code: failure.code, message: failure.message } });
    });
  });
  server.keepAliveTimeout = 65_000;
  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });

  try {
    await pool.ready();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    clearInterval(sweeper);
    if (ownsPool) await pool.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    pool,
    async close() {
      clearInterval(sweeper);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await Promise.all([...sessions.values()].map((session) => session.close()));
      sessions.clear();
      if (ownsPool) await pool.close();
    },
  };
}

function sendJson(response: http.ServerResponse, status: number, body: unknown): void {
  const payload = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
  });
  response.end(payload);
}

function readBody(request: http.IncomingMessage, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    request.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > maxBytes) {
        failed = true;
        reject(new HttpError(413, 'BODY_TOO_LARGE', `request body exceeds ${maxBytes} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    request.on('error', (error) => {
      if (!failed) reject(error);
    });
  });
}

/** The one method of each fixed route; another method is a 405. */
const ROUTE_METHODS: Record<string, string | undefined> = {
  '/v1/health': 'GET',
  '/metrics': 'GET',
  '/v1/sessions': 'POST',
  '/run_code': 'POST',
};

/** `POST /v1/sessions` takes no fields (yet). */
const openSessionRequestSchema = z.object({}).strict();

function parseJson<T>(text: string, schema: z.ZodType<T>): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'BAD_JSON', 'request body is not valid JSON');
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') || '(body)';
    throw new HttpError(400, 'BAD_REQUEST', `field "${field}": ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'SANDBOX_POOL_FULL') return new HttpError(503, code, message);
  if (code === 'SANDBOX_START_FAILED') return new HttpError(503, code, message);
  return new HttpError(500, 'INTERNAL', message);
}
