/**
 * The OpenAI-chat teacher against a scripted server speaking the real wire format: retries on
 * 429 (waiting the server's retry-after), 500, truncated JSON and slow answers; no retry on
 * 400; an outage is a value with its reason; the key travels only as a header.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OpenAiTeacher, retryAfterMs } from '../src/synth/index.ts';
import type { TeacherRequest } from '../src/synth/teacher.ts';
import { type ScriptedTeacher, startScriptedTeacher } from './fixtures/scripted-teacher-server.ts';

const request: TeacherRequest = {
  purpose: 'rewrite',
  recordId: 'r1',
  messages: [{ role: 'user', content: 'hello' }],
  maxTokens: 64,
  temperature: 0,
};

/** A clock whose sleeps return at once and are recorded. */
function recordingClock() {
  const sleeps: number[] = [];
  return { sleeps, clock: { now: () => 0, sleep: async (ms: number) => void sleeps.push(ms) } };
}

describe('OpenAiTeacher', () => {
  let server: ScriptedTeacher;
  beforeEach(async () => {
    server = await startScriptedTeacher((content) => `echo: ${content}`);
  });
  afterEach(async () => server.close());

  it('waits at least retry-after after a 429, then returns the answer with its usage', async () => {
    server.faults.push({ kind: '429', retryAfter: '3' });
    const { sleeps, clock } = recordingClock();
    const teacher = new OpenAiTeacher({
      baseUrl: server.url,
      model: 'm',
      clock,
      baseDelayMs: 10,
      random: () => 0,
    });
    const result = await teacher.complete(request);
    expect(result).toEqual({
      status: 'ok',
      fromJournal: false,
      answer: { text: 'echo: hello', promptTokens: 5, completionTokens: 11 },
      attempts: 2,
    });
    expect(server.requests).toHaveLength(2);
    expect(sleeps).toEqual([3000]);
  });

  it('retries 500s and a truncated JSON body with growing backoff', async () => {
    server.faults.push({ kind: '500' }, { kind: 'truncated' }, { kind: '500' });
    const { sleeps, clock } = recordingClock();
    const teacher = new OpenAiTeacher({
      baseUrl: server.url,
      model: 'm',
      clock,
      baseDelayMs: 100,
      random: () => 0.999999,
    });
    const result = await teacher.complete(request);
    expect(result.status).toBe('ok');
    expect(server.requests).toHaveLength(4);
    expect(sleeps.map(Math.round)).toEqual([100, 200, 400]);
  });

  it('times out a slow answer and retries it', async () => {
    server.faults.push({ kind: 'slow', delayMs: 1500 });
    const { clock } = recordingClock();
    const teacher = new OpenAiTeacher({ baseUrl: server.url, model: 'm', clock, timeoutMs: 300 });
    const result = await teacher.complete(request);
    expect(result.status).toBe('ok');
    expect(server.requests).toHaveLength(2);
  });

  it('does not retry a 400 and reports the outage as a value', async () => {
    server.faults.push({ kind: '400' });
    const teacher = new OpenAiTeacher({ baseUrl: server.url, model: 'm', clock: recordingClock().clock });
    const result = await teacher.complete(request);
    expect(result).toEqual({
      status: 'unavailable',
      reason: expect.stringContaining('HTTP 400'),
      attempts: 1,
    });
    expect(server.requests).toHaveLength(1);
  });

  it('gives up after maxRetries with the last reason', async () => {
    server.faultFor = () => ({ kind: '500' });
    const teacher = new OpenAiTeacher({
      baseUrl: server.url,
      model: 'm',
      clock: recordingClock().clock,
      maxRetries: 2,
    });
    const result = await teacher.complete(request);
    expect(result).toEqual({
      status: 'unavailable',
      reason: expect.stringContaining('HTTP 500'),
      attempts: 3,
    });
    expect(server.requests).toHaveLength(3);
  });

  it('sends the key only as a bearer header', async () => {
    const teacher = new OpenAiTeacher({ baseUrl: `${server.url}/v1`, model: 'm', apiKey: 'sk-test-secret' });
    await teacher.complete(request);
    expect(server.requests[0]?.authorization).toBe('Bearer sk-test-secret');
    expect(JSON.stringify(server.requests[0]?.body)).not.toContain('sk-test-secret');
  });

  it('reads retry-after as seconds or an HTTP date', () => {
    expect(retryAfterMs('2', 0)).toBe(2000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(retryAfterMs('soon', 0)).toBeNull();
    expect(retryAfterMs(null, 0)).toBeNull();
  });
});
