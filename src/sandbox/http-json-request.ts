/**
 * One JSON request over node:http with keep-alive, a hard timeout, and retries only for
 * idempotent methods (GET, DELETE) on connection failures. Connection failures and timeouts
 * throw `SandboxUnavailableError`; any HTTP status is returned to the caller to interpret.
 */
import http from 'node:http';
import { SandboxUnavailableError } from './sandbox-errors.ts';

export type JsonResponse = { status: number; body: unknown };

export type JsonRequest = {
  baseUrl: string;
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  body?: unknown;
  token?: string | undefined;
  timeoutMs: number;
  agent: http.Agent;
  retries?: number;
};

const IDEMPOTENT = new Set(['GET', 'DELETE']);

/** Sends the request; retries idempotent ones up to `retries` times (default 2). */
export async function requestJson(request: JsonRequest): Promise<JsonResponse> {
  const attempts = IDEMPOTENT.has(request.method) ? 1 + (request.retries ?? 2) : 1;
  let lastError: unknown;
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    try {
      return await sendOnce(request);
    } catch (error) {
      lastError = error;
      if (attempt + 1 < attempts) await new Promise((resolve) => setTimeout(resolve, 50 * (attempt + 1)));
    }
  }
  const detail = lastError instanceof Error ? lastError.message : String(lastError);
  throw new SandboxUnavailableError(request.baseUrl, `${request.method} ${request.path}: ${detail}`, {
    cause: lastError,
  });
}

function sendOnce(request: JsonRequest): Promise<JsonResponse> {
  const url = new URL(request.path, request.baseUrl);
  const payload = request.body === undefined ? undefined : Buffer.from(JSON.stringify(request.body), 'utf8');
  const headers: Record<string, string> = { accept: 'application/json' };
  if (payload) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(payload.length);
  }
  if (request.token) headers.authorization = `Bearer ${request.token}`;
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      url,
      { method: request.method, headers, agent: request.agent },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = null;
          if (text) {
            try {
              body = JSON.parse(text);
            } catch {
              body = { error: { code: 'NOT_JSON', message: text.slice(0, 200) } };
            }
          }
          resolve({ status: response.statusCode ?? 0, body });
        });
      },
    );
    const timer = setTimeout(() => {
      outgoing.destroy(new Error(`no answer within ${request.timeoutMs} ms`));
    }, request.timeoutMs);
    outgoing.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    outgoing.end(payload);
  });
}

/** The `error.message` of a server's JSON error body, or a fallback. */
export function errorMessage(body: unknown): { code: string; message: string } {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return {
    code: typeof error?.code === 'string' ? error.code : 'UNKNOWN',
    message: typeof error?.message === 'string' ? error.message : JSON.stringify(body).slice(0, 200),
  };
}
