/**
 * Shared pieces of the engine clients: validating an answer body against its wire schema
 * (a clear ENGINE_BAD_RESPONSE naming the field), and the result of a cancelled request.
 */
import type { z } from 'zod';
import { EngineBadResponseError } from './engine-errors.ts';
import type { GenerateResult } from './types.ts';

/** Parses `body` with `schema` or throws EngineBadResponseError naming the first bad field. */
export function parseResponseBody<T>(schema: z.ZodType<T>, body: unknown, where: string): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue && issue.path.length > 0 ? issue.path.join('.') : '(body)';
  throw new EngineBadResponseError(where, `field ${field}: ${issue?.message ?? 'invalid'}`, {
    cause: parsed.error,
  });
}

/** What `generate` resolves with when its AbortSignal fired: nothing generated is kept. */
export function abortedResult(tokenLevel: boolean): GenerateResult {
  return {
    tokenIds: tokenLevel ? [] : null,
    text: '',
    logprobs: tokenLevel ? [] : null,
    finishReason: 'abort',
    matchedStop: null,
    stopIncluded: false,
    policyVersion: null,
  };
}

/** A policy version from a server's weight-version field, when it is an integer. */
export function policyVersionFrom(value: unknown): number | null {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value);
  return null;
}

/** The text parsed as JSON, or null when it is not JSON (an error page, a plain-text answer). */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
