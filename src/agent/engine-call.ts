/**
 * One turn's engine call with retries, a per-call time limit and the caller's abort signal.
 * This is the one place that retries an engine request: clients make one attempt per call and
 * say whether a failure is retryable (`retryAdvice`); back-off waits on the clock.
 * It never throws for engine failures: the result says whether the call succeeded, was
 * aborted, or failed every attempt (with the last error as the cause), so a trajectory
 * always finishes and never hangs on a dead engine.
 */

import { EngineTimeoutError, retryAdvice } from '../engine/engine-errors.ts';
import type { Engine, GenerateRequest, GenerateResult } from '../engine/types.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { type Clock, systemClock } from '../shared/clock.ts';
import { EngineFailedError } from './agent-errors.ts';
import type { AgentConfig } from './agent-options.ts';

export type EngineCallResult =
  | { status: 'ok'; result: GenerateResult; ms: number }
  | { status: 'aborted'; ms: number }
  | { status: 'paused'; ms: number }
  | { status: 'failed'; error: EngineFailedError; ms: number };

export type EngineCallOptions = {
  retry: AgentConfig['retry'];
  timeoutMs: number;
  signal: AbortSignal | undefined;
  /**
   * A pause request: passed to the engine with the other signals, so an engine that can
   * answers at once with `finishReason: 'abort'` and the tokens generated so far (returned as
   * `ok`); an engine that throws instead gives `paused`. Never retried.
   */
  pause?: AbortSignal;
  /** Measures the call, times it out and waits between attempts; default `systemClock`. */
  clock?: Clock;
  onRetry?: (attempt: number, delayMs: number, error: unknown) => void;
};

/** Calls the engine until it answers, the attempts run out, or the caller aborts. */
export async function callEngine(
  engine: Engine,
  request: GenerateRequest,
  { retry, timeoutMs, signal, pause, clock = systemClock, onRetry }: EngineCallOptions,
): Promise<EngineCallResult> {
  const started = clock.now();
  const elapsed = () => clock.now() - started;
  let lastError: unknown = null;
  let attempts = 0;
  for (let attempt = 1; attempt <= retry.attempts; attempt++) {
    attempts = attempt;
    if (signal?.aborted) return { status: 'aborted', ms: elapsed() };
    if (pause?.aborted) return { status: 'paused', ms: elapsed() };
    const timeout = new AbortController();
    const timer = new AbortController();
    void clock.sleep(timeoutMs, timer.signal).then(() => {
      if (!timer.signal.aborted) timeout.abort(new EngineTimeoutError(engine.name, timeoutMs));
    });
    const hard = signal === undefined ? timeout.signal : AbortSignal.any([signal, timeout.signal]);
    // The engine sees the pause too; the loop stops waiting only on a hard abort or the timeout,
    // so a paused engine can still hand back its partial tokens.
    const combined = pause === undefined ? hard : AbortSignal.any([hard, pause]);
    try {
      const result = await untilAborted(engine.generate(request, combined), hard);
      if (signal?.aborted) return { status: 'aborted', ms: elapsed() };
      // Clients answer an aborted request with an `abort` result; ours was a timeout.
      if (timeout.signal.aborted) throw timeout.signal.reason;
      return { status: 'ok', result, ms: elapsed() };
    } catch (error) {
      if (signal?.aborted) return { status: 'aborted', ms: elapsed() };
      if (pause?.aborted && !timeout.signal.aborted) return { status: 'paused', ms: elapsed() };
      lastError = timeout.signal.aborted ? timeout.signal.reason : error;
    } finally {
      timer.abort();
    }
    const advice = retryAdvice(lastError);
    if (!advice.retryable) break;
    if (attempt < retry.attempts) {
      // Exponential back-off, or longer when the server said so (HTTP 429/503 Retry-After).
      const backoffMs = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
      const delayMs = Math.max(backoffMs, advice.retryAfterMs ?? 0);
      onRetry?.(attempt, delayMs, lastError);
      await clock.sleep(delayMs, signal);
      if (signal?.aborted) return { status: 'aborted', ms: elapsed() };
    }
  }
  return {
    status: 'failed',
    error: new EngineFailedError(engine.name, attempts, { cause: lastError }),
    ms: elapsed(),
  };
}

/** The error as `{ code, message }` for records and events. */
export function describeError(error: unknown): { code: string; message: string } {
  if (error instanceof AgentMathError) return { code: error.code, message: error.message };
  if (error instanceof Error) return { code: 'UNEXPECTED', message: error.message };
  return { code: 'UNEXPECTED', message: String(error) };
}

/**
 * Settles with the promise, or rejects as soon as the signal aborts: an engine that ignores
 * its signal cannot hold the loop.
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
