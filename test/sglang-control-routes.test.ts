/**
 * The SGLang client's control routes do not queue behind generation: with every generation
 * slot taken (here one, held by the server until it is paused), `/pause_generation` still
 * reaches the server. On a shared client it would wait for the request it is meant to pause.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine/create-engine.ts';
import type { SglangEngine } from '../src/engine/sglang-engine.ts';

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

describe('SGLang control routes', () => {
  it('a pause reaches a server whose generation slots are all held', async () => {
    const routes: string[] = [];
    let releaseGenerate = () => {};
    const held = new Promise<void>((resolve) => (releaseGenerate = resolve));
    const server = createServer((request: IncomingMessage, response: ServerResponse) => {
      routes.push(request.url ?? '');
      request.resume();
      request.on('end', async () => {
        response.setHeader('content-type', 'application/json');
        if (request.url === '/generate') {
          await held; // answered once the server has been paused
          response.end(
            JSON.stringify({ text: 'x', output_ids: [1], meta_info: { finish_reason: { type: 'length' } } }),
          );
          return;
        }
        if (request.url === '/pause_generation') releaseGenerate();
        response.end(JSON.stringify({}));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => server.close());
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const engine = createEngine({ api: 'sglang', url, maxConcurrency: 1 }) as unknown as SglangEngine & {
      close(): void;
    };
    closers.push(() => engine.close());
    const generation = engine.generate({
      promptTokenIds: [1, 2],
      maxNewTokens: 1,
      temperature: 0,
      topP: 1,
      stop: [],
    });
    while (!routes.includes('/generate')) await new Promise((resolve) => setTimeout(resolve, 10));
    await engine.pauseGeneration('in_place');
    await engine.continueGeneration();
    await expect(generation).resolves.toMatchObject({ text: 'x' });
    expect(routes).toEqual(['/generate', '/pause_generation', '/continue_generation']);
  }, 20_000);
});
