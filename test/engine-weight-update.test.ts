import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type WeightUpdatableEngine } from '../src/engine/index.ts';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** A server answering SGLang's `/update_weights_from_disk` as SGLang does. */
async function weightServer(answer: unknown, status = 200) {
  const bodies: unknown[] = [];
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    request.on('end', () => {
      if (request.url !== '/update_weights_from_disk') return response.writeHead(404).end();
      bodies.push(JSON.parse(text));
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => server.close());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies };
}

describe('updateWeightsFromDisk on the SGLang client', () => {
  it('posts model_path and returns what the server said', async () => {
    const { url, bodies } = await weightServer({
      success: true,
      message: 'Succeeded to update model weights.',
    });
    const engine = createEngine({ api: 'sglang', url }) as WeightUpdatableEngine & { close(): void };
    closers.push(() => engine.close());
    await expect(engine.updateWeightsFromDisk('/ckpt/step-3')).resolves.toEqual({
      success: true,
      message: 'Succeeded to update model weights.',
    });
    expect(bodies).toEqual([{ model_path: '/ckpt/step-3' }]);
  });

  it("sends the policy version as SGLang's weight_version (a string) when given", async () => {
    const { url, bodies } = await weightServer({ success: true, message: 'ok' });
    const engine = createEngine({ api: 'sglang', url }) as WeightUpdatableEngine & { close(): void };
    closers.push(() => engine.close());
    await engine.updateWeightsFromDisk('/ckpt/step-4', { weightVersion: 4 });
    expect(bodies).toEqual([{ model_path: '/ckpt/step-4', weight_version: '4' }]);
  });

  it("returns SGLang's refusal (HTTP 400, success false) as a value: the engine was reached", async () => {
    const refusal = { success: false, message: 'Failed to update weights: no such folder: /ckpt/missing' };
    const { url } = await weightServer(refusal, 400);
    const engine = createEngine({ api: 'sglang', url }) as WeightUpdatableEngine & { close(): void };
    closers.push(() => engine.close());
    await expect(engine.updateWeightsFromDisk('/ckpt/missing')).resolves.toEqual(refusal);
    const { url: broken } = await weightServer({ error: { message: 'bad request' } }, 400);
    const other = createEngine({ api: 'sglang', url: broken }) as WeightUpdatableEngine & { close(): void };
    closers.push(() => other.close());
    await expect(other.updateWeightsFromDisk('/ckpt')).rejects.toMatchObject({ code: 'ENGINE_HTTP_4XX' });
  });

  it('refuses an answer of the wrong shape, naming the route', async () => {
    const { url } = await weightServer({ ok: 1 });
    const engine = createEngine({ api: 'sglang', url }) as WeightUpdatableEngine & { close(): void };
    closers.push(() => engine.close());
    await expect(engine.updateWeightsFromDisk('/ckpt')).rejects.toMatchObject({
      code: 'ENGINE_BAD_RESPONSE',
    });
  });
});
