/**
 * One HTTP request over node:http, bounded by its own timeout and nothing else. Node's `fetch`
 * (undici) ends any request whose response headers take longer than its dispatcher's
 * `headersTimeout` (300 s by default) whatever AbortSignal it is given, and the trainer's
 * `/export`, `/grpo_step` and `/broadcast_weights` or an engine's weight load answer only when
 * done: for a large model, later than that. node:http's client has no such limit. What ends a
 * request is a value: an answer (any status), a timeout, or no connection.
 */
import http from 'node:http';
import https from 'node:https';

export type LongRequestOutcome =
  | { kind: 'answer'; status: number; text: string }
  | { kind: 'timeout'; timeoutMs: number }
  | { kind: 'unreachable'; error: Error };

export type LongRequest = {
  url: string;
  method: 'GET' | 'POST';
  body?: Uint8Array | string;
  contentType?: string;
  headers?: Record<string, string>;
  timeoutMs: number;
};

export function longRequest({
  url,
  method,
  body,
  contentType,
  headers = {},
  timeoutMs,
}: LongRequest): Promise<LongRequestOutcome> {
  const target = new URL(url);
  const transport = target.protocol === 'https:' ? https : http;
  const payload = body === undefined ? undefined : typeof body === 'string' ? Buffer.from(body) : body;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: LongRequestOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const request = transport.request(target, {
      method,
      headers: {
        ...headers,
        ...(contentType === undefined ? {} : { 'content-type': contentType }),
        ...(payload === undefined ? {} : { 'content-length': String(payload.byteLength) }),
      },
    });
    const timer = setTimeout(() => {
      settle({ kind: 'timeout', timeoutMs });
      request.destroy();
    }, timeoutMs);
    request.on('error', (error) => settle({ kind: 'unreachable', error }));
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', (error) => settle({ kind: 'unreachable', error }));
      response.on('end', () =>
        settle({
          kind: 'answer',
          status: response.statusCode ?? 0,
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    request.end(payload);
  });
}
