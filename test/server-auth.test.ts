/**
 * Servers are not open to strangers. Refusals (a public bind without a token, an empty token
 * or key, a token with --no-auth) are checked through the real CLI before anything binds, so
 * these tests bind nothing but loopback. The embedded worker with an API key answers requests
 * with the key and refuses those without it, through the project's own clients; the key is
 * not on the worker's command line.
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createByteLevelTokenizer, createEngine } from '../src/engine/index.ts';
import { type EmbeddedWorker, startEmbeddedWorker } from '../src/engine/local/index.ts';
import { killAllClis, startCli } from './cli-process.ts';

afterAll(() => killAllClis());

/** `trainer serve` follows the same rule (its --model is never read: the refusal comes first). */
function trainerRefusals(): Array<{ name: string; args: string[]; env?: NodeJS.ProcessEnv; code: string }> {
  const serve = ['trainer', 'serve', '--model', '/nonexistent-model'];
  return [
    { name: 'trainer: public host, no token', args: [...serve, '--host', '0.0.0.0'], code: 'AUTH_REQUIRED' },
    { name: 'trainer: --token ""', args: [...serve, '--token', ''], code: 'AUTH_TOKEN_EMPTY' },
    {
      name: 'trainer: empty AGENTMATH_TRAINER_TOKEN',
      args: [...serve, '--host', '0.0.0.0'],
      env: { AGENTMATH_TRAINER_TOKEN: '' },
      code: 'AUTH_TOKEN_EMPTY',
    },
    {
      name: 'trainer: a token and --no-auth',
      args: [...serve, '--token', 't0k3n', '--no-auth'],
      code: 'AUTH_CONFLICT',
    },
  ];
}

describe('refused before binding', () => {
  const refusals: Array<{ name: string; args: string[]; env?: NodeJS.ProcessEnv; code: string }> = [
    {
      name: 'sandbox: public host, no token',
      args: ['sandbox', 'serve', '--host', '0.0.0.0'],
      code: 'AUTH_REQUIRED',
    },
    { name: 'sandbox: --token ""', args: ['sandbox', 'serve', '--token', ''], code: 'AUTH_TOKEN_EMPTY' },
    {
      name: 'sandbox: empty AGENTMATH_SANDBOX_TOKEN',
      args: ['sandbox', 'serve', '--host', '0.0.0.0'],
      env: { AGENTMATH_SANDBOX_TOKEN: '' },
      code: 'AUTH_TOKEN_EMPTY',
    },
    {
      name: 'sandbox: a token and --no-auth',
      args: ['sandbox', 'serve', '--token', 't0k3n', '--no-auth'],
      code: 'AUTH_CONFLICT',
    },
    { name: 'engine: public host, no key', args: ['engine', 'serve', '--host', '::'], code: 'AUTH_REQUIRED' },
    { name: 'engine: --api-key ""', args: ['engine', 'serve', '--api-key', ''], code: 'AUTH_TOKEN_EMPTY' },
    {
      name: 'engine: empty AGENTMATH_ENGINE_API_KEY',
      args: ['engine', 'serve', '--host', '0.0.0.0'],
      env: { AGENTMATH_ENGINE_API_KEY: '' },
      code: 'AUTH_TOKEN_EMPTY',
    },
    ...trainerRefusals(),
  ];

  it.each(refusals)(
    '$name → $code',
    async ({ args, env, code }) => {
      const result = await startCli([...args, '--port', '0'], {
        cwd: tmpdir(),
        limitMs: 30_000,
        env: {
          AGENTMATH_SANDBOX_TOKEN: undefined,
          AGENTMATH_ENGINE_API_KEY: undefined,
          AGENTMATH_TRAINER_TOKEN: undefined,
          ...env,
        },
      }).done;
      expect(result.code).toBe(2); // a command-line mistake, found before anything starts
      expect(result.stderr).toContain(`[${code}]`);
      // Nothing was served: no URL on stdout, no worker started.
      expect(result.stdout).toBe('');
      expect(result.stderr).not.toMatch(/\[worker\]|serving/);
    },
    40_000,
  );
});

describe('the embedded worker with an API key', () => {
  const KEY = 'engine-key-5c1e9a';
  let worker: EmbeddedWorker;

  beforeAll(async () => {
    worker = await startEmbeddedWorker({ model: 'test', decodeThreads: 1, apiKey: KEY });
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
  });

  const request = () => ({
    promptTokenIds: createByteLevelTokenizer().encode('Compute 6*7.'),
    maxNewTokens: 4,
    temperature: 0,
    topP: 1,
    stop: [],
  });

  it('answers the engine client and the control routes when they send the key', async () => {
    const engine = createEngine({ api: 'sglang', url: worker.url, apiKey: KEY });
    try {
      const result = await engine.generate(request());
      expect(result.tokenIds?.length).toBeGreaterThan(0);
    } finally {
      engine.close();
    }
    const info = await fetch(`${worker.url}/model_info`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(((await info.json()) as { weight_version: string }).weight_version).toBe('0');
  });

  it('refuses requests without the key or with a wrong one, and keeps /health open', async () => {
    for (const apiKey of [undefined, 'wrong-key']) {
      const engine = createEngine({
        api: 'sglang',
        url: worker.url,
        ...(apiKey === undefined ? {} : { apiKey }),
      });
      try {
        await expect(engine.generate(request())).rejects.toMatchObject({
          code: 'ENGINE_HTTP_4XX',
          status: 401,
        });
      } finally {
        engine.close();
      }
    }
    expect((await fetch(`${worker.url}/model_info`)).status).toBe(401);
    const update = fetch(`${worker.url}/update_weights_from_disk`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer wrong-key' },
      body: JSON.stringify({ model_path: '/tmp' }),
    });
    expect((await update).status).toBe(401);
    expect((await fetch(`${worker.url}/health`)).status).toBe(200);
  });

  it('keeps the key off the worker command line', () => {
    const commandLine = readFileSync(`/proc/${worker.pid()}/cmdline`, 'utf8');
    expect(commandLine).toContain('agentmath_engine');
    expect(commandLine).not.toContain(KEY);
  });

  it('runs the worker with the Hugging Face hub offline (model folders are local)', () => {
    const environment = readFileSync(`/proc/${worker.pid()}/environ`, 'utf8').split('\0');
    expect(environment).toContain('HF_HUB_OFFLINE=1');
  });
});
