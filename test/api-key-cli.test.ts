/**
 * API keys never leak: `eval` and `solve` against a server that refuses every request with 401
 * and echoes the bearer token it got in the error (the worst case). The key, given with
 * `--api-key` or in `OPENAI_API_KEY`, reaches the server and appears in no output and no file
 * of the run; the resume hint names the environment variable instead.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllClis, startCli } from './cli-process.ts';

let folder: string;
let server: Server;
let url: string;
const authorizations: string[] = [];

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'agentmath-api-key-'));
  server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const authorization = request.headers.authorization ?? '';
      authorizations.push(authorization);
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          error: {
            message: `Incorrect API key provided: ${authorization.replace(/^Bearer /, '')}.`,
            type: 'invalid_request_error',
            param: null,
            code: 'invalid_api_key',
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  killAllClis();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(folder, { recursive: true, force: true });
});

/** Every file under `dir`, read as text. */
function filesUnder(dir: string): Array<{ path: string; text: string }> {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [{ path, text: readFileSync(path, 'latin1') }];
  });
}

/** `solve` against the refusing server. */
function solveArgs(api: 'openai' | 'openai-chat'): string[] {
  return ['solve', 'What is 2 + 2?', '--engine', url, '--api', api, '--model', 'gpt-scripted'];
}

const cases = [
  { how: '--api-key', key: 'sk-flag-3b9f1c2e7d', viaFlag: true },
  { how: 'OPENAI_API_KEY', key: 'sk-env-8a4d6e0f5b', viaFlag: false },
];

describe.each(cases)('a key given with $how', ({ key, viaFlag }) => {
  const keyArgs = viaFlag ? ['--api-key', key] : [];
  const env = viaFlag ? {} : { OPENAI_API_KEY: key };

  it('eval: reaches the server, is in no output and no file; the hint names the variable', async () => {
    const out = join(folder, `eval-${viaFlag ? 'flag' : 'env'}`);
    const sent = authorizations.length;
    const args = ['eval', '--bench', 'arith', '--limit', '2', '--out', out, '--engine', url];
    args.push('--api', 'openai', '--model', 'gpt-scripted', ...keyArgs, '--sandbox-workers', '1');
    const result = await startCli(args, { cwd: folder, env }).done;
    expect(result.code).toBe(1);
    expect(authorizations.slice(sent).every((value) => value === `Bearer ${key}`)).toBe(true);
    expect(authorizations.length).toBeGreaterThan(sent);
    expect(result.stderr).toMatch(/Retry them with:\n {2}agentmath eval .*--resume/);
    if (viaFlag) expect(result.stderr).toMatch(/with the API key in OPENAI_API_KEY/);
    expect(result.stdout + result.stderr).not.toContain(key);
    const files = filesUnder(out);
    expect(files.map((file) => file.path)).toContain(join(out, 'errors.jsonl'));
    // The server's echo was recorded, with the key taken out.
    expect(readFileSync(join(out, 'errors.jsonl'), 'utf8')).toMatch(
      /Incorrect API key provided: \[redacted\]/,
    );
    for (const file of files) expect(file.text, file.path).not.toContain(key);
  }, 120_000);

  it('solve: the error names the server, not the key', async () => {
    const result = await startCli([...solveArgs('openai-chat'), ...keyArgs, '--json'], { cwd: folder, env })
      .done;
    expect(result.stdout + result.stderr).toMatch(/HTTP 401/);
    expect(result.stdout + result.stderr).not.toContain(key);
  }, 120_000);
});

it('refuses an empty --api-key instead of sending no key', async () => {
  const result = await startCli([...solveArgs('openai'), '--api-key', ''], { cwd: folder }).done;
  expect(result.code).not.toBe(0);
  expect(result.stderr).toMatch(/--api-key is empty/);
}, 60_000);
