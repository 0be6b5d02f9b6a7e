import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxClient, type SandboxServer, startSandboxServer } from '../src/sandbox/index.ts';
import { describeSandboxContract } from './sandbox-contract.ts';

const poolOptions = {
  preload: [],
  warmWorkers: 2,
  maxWorkers: 4,
  graceMs: 300,
  memoryLimitBytes: 512 * 1024 ** 2,
};

describeSandboxContract('HTTP service', async () => {
  const server = await startSandboxServer({ poolOptions, token: 'contract-token', log: () => {} });
  const client = new SandboxClient({ url: server.url, token: 'contract-token' });
  return {
    provider: client,
    teardown: async () => {
      await client.close();
      await server.close();
    },
  };
});

describe('HTTP service requests', () => {
  let server: SandboxServer;
  const token = 'secret-token';
  const call = async (method: string, path: string, body?: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body }),
    });
    const text = await response.text();
    return { status: response.status, text, json: text.startsWith('{') ? JSON.parse(text) : null };
  };

  beforeAll(async () => {
    server = await startSandboxServer({
      poolOptions: { ...poolOptions, maxWorkers: 2, acquireTimeoutMs: 500 },
      token,
      maxBodyBytes: 64 * 1024,
      log: () => {},
    });
  });
  afterAll(async () => {
    await server.close();
  });

  it('answers 401 without the bearer token', async () => {
    const response = await call('GET', '/v1/health', undefined, { authorization: 'Bearer wrong' });
    expect(response.status).toBe(401);
    expect(response.json.error.code).toBe('UNAUTHORIZED');
    const bare = await fetch(`${server.url}/v1/sessions`, { method: 'POST' });
    expect(bare.status).toBe(401);
  });

  it('rejects bad requests with a 4xx naming the problem', async () => {
    expect((await call('POST', '/v1/sessions/nope/execute', '{not json')).status).toBe(400);
    const opened = await call('POST', '/v1/sessions', '{}');
    expect(opened.status).toBe(201);
    const path = `/v1/sessions/${opened.json.id}`;
    const missing = await call('POST', `${path}/execute`, '{"timeout_ms": 5}');
    expect(missing.status).toBe(400);
    expect(missing.json.error.message).toMatch(/"code"/);
    expect((await call('POST', `${path}/execute`, '{"code": "1", "extra": 1}')).status).toBe(400);
    expect((await call('POST', '/v1/sessions/unknown-id/execute', '{"code": "1"}')).status).toBe(404);
    expect((await call('GET', `${path}/execute`)).status).toBe(405);
    expect((await call('GET', '/nowhere')).status).toBe(404);
    const huge = await call(
      'POST',
      `${path}/execute`,
      JSON.stringify({ code: `x = "${'a'.repeat(100_000)}"` }),
    );
    expect(huge.status).toBe(413);
    const ok = await call('POST', `${path}/execute`, '{"code": "print(6 * 7)", "timeout_ms": 2000}');
    expect(ok.json).toMatchObject({ status: 'ok', stdout: '42\n' });
    expect((await call('DELETE', path)).status).toBe(204);
    expect((await call('DELETE', path)).status).toBe(404);
    expect((await call('GET', '/v1/health')).json).toMatchObject({
      status: 'ok',
      sessions: 0,
      maxSessions: 2,
    });
  });

  it('opens no session for a malformed POST /v1/sessions, and answers 405 to a wrong method', async () => {
    const before = (await call('GET', '/v1/health')).json.sessions;
    const malformed = await call('POST', '/v1/sessions', '{not json');
    expect(malformed.status).toBe(400);
    expect(malformed.json.error.code).toBe('BAD_JSON');
    expect((await call('POST', '/v1/sessions', '{"unknown": 1}')).status).toBe(400);
    expect((await call('POST', '/v1/sessions', '[1, 2]')).status).toBe(400);
    expect((await call('GET', '/v1/health')).json.sessions).toBe(before);
    for (const [method, path] of [
      ['GET', '/v1/sessions'],
      ['POST', '/v1/health'],
      ['DELETE', '/metrics'],
      ['GET', '/run_code'],
    ] as const) {
      const response = await call(method, path);
      expect(response.status, `${method} ${path}`).toBe(405);
      expect(response.json.error.code).toBe('METHOD_NOT_ALLOWED');
    }
    // An empty body still opens one.
    const opened = await call('POST', '/v1/sessions', '');
    expect(opened.status).toBe(201);
    expect((await call('DELETE', `/v1/sessions/${opened.json.id}`)).status).toBe(204);
  });

  it('speaks the SandboxFusion /run_code protocol', async () => {
    const run = (body: unknown) => call('POST', '/run_code', JSON.stringify(body));
    const success = await run({
      code: 'print(sum(range(10)))',
      language: 'python',
      run_timeout: 5,
      memory_limit_MB: 512,
    });
    expect(success.status).toBe(200);
    expect(success.json).toMatchObject({
      status: 'Success',
      run_result: { status: 'Finished', return_code: 0, stdout: '45\n', stderr: '' },
    });
    expect(typeof success.json.run_result.execution_time).toBe('number');
    const failed = await run({ code: 'raise ValueError("bad")', language: 'python' });
    expect(failed.json).toMatchObject({
      status: 'Failed',
      run_result: { status: 'Finished', return_code: 1 },
    });
    expect(failed.json.run_result.stderr).toMatch(/ValueError: bad/);
    // The process's own exit status, as SandboxFusion reports it.
    const exited = await run({ code: 'print("so far")\nimport sys\nsys.exit(3)', language: 'python' });
    expect(exited.json).toMatchObject({
      status: 'Failed',
      run_result: { status: 'Finished', return_code: 3, stdout: 'so far\n' },
    });
    expect(exited.json.run_result.stderr).toMatch(/SystemExit: 3/);
    const message = await run({ code: 'import sys\nsys.exit("bad input")', language: 'python' });
    expect(message.json.run_result.return_code).toBe(1);
    const clean = await run({ code: 'import sys\nsys.exit(0)', language: 'python' });
    expect(clean.json).toMatchObject({ status: 'Success', run_result: { return_code: 0 } });
    const slow = await run({ code: 'import time\ntime.sleep(10)', language: 'python', run_timeout: 0.3 });
    expect(slow.json).toMatchObject({ status: 'Failed', run_result: { status: 'TimeLimitExceeded' } });
    const memory = await run({ code: 'b = bytearray(8 * 1024 ** 3)', language: 'python' });
    expect(memory.json).toMatchObject({ status: 'Failed', run_result: { status: 'MemoryLimitExceeded' } });
    expect((await run({ code: 'print(1)', language: 'cpp' })).status).toBe(400);
  });

  it('reports pool exhaustion as 503 SANDBOX_POOL_FULL and exposes Prometheus metrics', async () => {
    const client = new SandboxClient({ url: server.url, token });
    const held = [await client.openSession(), await client.openSession()];
    try {
      await expect(client.openSession()).rejects.toMatchObject({ code: 'SANDBOX_POOL_FULL' });
    } finally {
      await Promise.all(held.map((session) => session.close()));
      await client.close();
    }
    const metrics = await call('GET', '/metrics');
    expect(metrics.text).toMatch(/agentmath_sandbox_calls_total\{status="ok"\} \d+/);
    expect(metrics.text).toMatch(/agentmath_sandbox_call_seconds_bucket\{le="\+Inf"\} \d+/);
    expect(metrics.text).toMatch(/agentmath_sandbox_workers\{state="idle"\} \d+/);
    expect(metrics.text).toMatch(/agentmath_sandbox_http_errors_total\{code="503"\} 1/);
  });
});
