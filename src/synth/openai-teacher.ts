/**
 * A teacher behind an OpenAI-compatible chat API (`POST {base}/v1/chat/completions`). The API
 * key is read by the caller (from `OPENAI_API_KEY`) and only ever sent as a header. Retries
 * with exponential backoff and jitter on connection errors, timeouts, 5xx, 429 (waiting at
 * least the server's `retry-after`, seconds or an HTTP date) and bodies that are not the
 * expected JSON (a truncated answer); other 4xx answers are not retried. A request that still
 * fails is a value (`unavailable` with the reason), so the run records it and goes on.
 */
import type { Clock } from '../shared/clock.ts';
import { systemClock } from '../shared/clock.ts';
import type { Teacher, TeacherRequest, TeacherResult } from './teacher.ts';

export type OpenAiTeacherOptions = {
  baseUrl: string;
  model: string;
  apiKey?: string | undefined;
  /** Limit for one attempt (default 120 s). */
  timeoutMs?: number;
  /** Attempts after the first (default 6). */
  maxRetries?: number;
  /** First backoff delay, doubled per retry (default 1 s), capped at `maxDelayMs` (default 60 s). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  clock?: Clock;
  random?: () => number;
};

type Attempt =
  | { retry: boolean; waitMs: number | null; reason: string }
  | { text: string; promptTokens: number; completionTokens: number };

/** Seconds or an HTTP date, as milliseconds from now; null when absent or unreadable. */
export function retryAfterMs(header: string | null, nowMs: number): number | null {
  if (header === null || header.trim() === '') return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? null : Math.max(0, date - nowMs);
}

function parseCompletion(text: string): Attempt {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return {
      retry: true,
      waitMs: null,
      reason: `answer is not complete JSON: ${JSON.stringify(text.slice(0, 80))}`,
    };
  }
  const choice = (body as { choices?: { message?: { content?: unknown } }[] }).choices?.[0];
  const content = choice?.message?.content;
  if (typeof content !== 'string')
    return { retry: true, waitMs: null, reason: 'answer has no choices[0].message.content' };
  const usage = (body as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } }).usage;
  const count = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
  return {
    text: content,
    promptTokens: count(usage?.prompt_tokens),
    completionTokens: count(usage?.completion_tokens),
  };
}

/** The OpenAI-compatible chat client used as a teacher. */
export class OpenAiTeacher implements Teacher {
  readonly #options: Required<Omit<OpenAiTeacherOptions, 'apiKey'>> & { apiKey: string | undefined };
  /** HTTP attempts made, for progress and tests. */
  attempts = 0;

  constructor(options: OpenAiTeacherOptions) {
    this.#options = {
      timeoutMs: 120_000,
      maxRetries: 6,
      baseDelayMs: 1000,
      maxDelayMs: 60_000,
      clock: systemClock,
      random: Math.random,
      ...options,
      baseUrl: options.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, ''),
      apiKey: options.apiKey,
    };
  }

  async complete(request: TeacherRequest, signal?: AbortSignal): Promise<TeacherResult> {
    const { maxRetries, baseDelayMs, maxDelayMs, clock, random } = this.#options;
    let reason = 'no attempt made';
    let attempts = 0;
    for (let attempt = 0; attempt <= maxRetries; attempt++) {
      if (signal?.aborted) return { status: 'unavailable', reason: 'aborted', attempts };
      const result = await this.#attempt(request, signal);
      attempts++;
      if ('text' in result) return { status: 'ok', answer: result, fromJournal: false, attempts };
      reason = this.#redact(result.reason);
      if (!result.retry || attempt === maxRetries) break;
      const backoff = Math.min(maxDelayMs, baseDelayMs * 2 ** attempt) * (0.5 + random() / 2);
      await clock.sleep(Math.max(backoff, result.waitMs ?? 0), signal).catch(() => {});
    }
    return { status: 'unavailable', reason, attempts };
  }

  /** The reason without the API key (a server may echo the header it rejected). */
  #redact(reason: string): string {
    const key = this.#options.apiKey;
    return key === undefined || key === '' ? reason : reason.split(key).join('***');
  }

  async #attempt(request: TeacherRequest, signal: AbortSignal | undefined): Promise<Attempt> {
    const { baseUrl, model, apiKey, timeoutMs } = this.#options;
    this.attempts++;
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      const response = await fetch(`${baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
        },
        body: JSON.stringify({
          model,
          messages: request.messages,
          max_tokens: request.maxTokens,
          temperature: request.temperature,
          n: 1,
          stream: false,
        }),
        signal: combined,
      });
      const text = await response.text();
      if (response.status === 429) {
        return {
          retry: true,
          waitMs: retryAfterMs(response.headers.get('retry-after'), Date.now()),
          reason: 'HTTP 429 rate limited',
        };
      }
      if (response.status >= 500)
        return { retry: true, waitMs: null, reason: `HTTP ${response.status}: ${text.slice(0, 120)}` };
      if (response.status >= 400)
        return { retry: false, waitMs: null, reason: `HTTP ${response.status}: ${text.slice(0, 200)}` };
      return parseCompletion(text);
    } catch (error) {
      if (signal?.aborted) return { retry: false, waitMs: null, reason: 'aborted' };
      if (timeout.aborted)
        return { retry: true, waitMs: null, reason: `no complete answer within ${timeoutMs} ms` };
      const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
      return { retry: true, waitMs: null, reason: `connection failed (${cause})` };
    }
  }
}
