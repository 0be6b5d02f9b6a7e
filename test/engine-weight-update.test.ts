/**
 * The weight-update routes of the SGLang and vLLM clients against the bodies SGLang 0.5.23 and
 * vLLM 0.33.0 answer, replayed verbatim (status, content type, body) from
 * fixtures/sglang-0.5.23-control-bodies.json and fixtures/vllm-0.33.0-rl-bodies.json, which name
 * the file and lines that build each one.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type GenerateRequest } from '../src/engine/index.ts';
import type { SglangEngine } from '../src/engine/sglang-engine.ts';
import type { VllmEngine } from '../src/engine/vllm-engine.ts';

type Fixture = { status: number; json?: unknown; text?: string };
const fixtures = (name: string) =>
  (
    JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8')) as {
      bodies: Record<string, Fixture>;
    }
  ).bodies;
const SGLANG = fixtures('sglang-0.5.23-control-bodies.json');
const VLLM = fixtures('vllm-0.33.0-rl-bodies.json');

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** Answers each `METHOD path` from the table (path with its query); logs every request. */
async function replay(table: Record<string, Fixture>) {
  const seen: { route: string; body: unknown }[] = [];
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    request.on('end', () => {
      const route = `${request.method} ${request.url}`;
      seen.push({ route, body: text === '' ? null : JSON.parse(text) });
      const fixture = table[route];
      if (fixture === undefined) return response.writeHead(404).end('{"detail":"Not Found"}');
      if (fixture.text !== undefined) {
        return response
          .writeHead(fixture.status, { 'content-type': 'text/plain; charset=utf-8' })
          .end(fixture.text);
      }
      response
        .writeHead(fixture.status, { 'content-type': 'application/json' })
        .end(JSON.stringify(fixture.json));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => server.close());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function sglang(url: string): SglangEngine {
  const engine = createEngine({ api: 'sglang', url }) as unknown as SglangEngine;
  closers.push(() => engine.close());
  return engine;
}

function vllm(url: string): VllmEngine {
  const engine = createEngine({ api: 'vllm', url }) as unknown as VllmEngine;
  closers.push(() => engine.close());
  return engine;
}

const request: GenerateRequest = {
  promptTokenIds: [1, 2, 3],
  maxNewTokens: 8,
  temperature: 1,
  topP: 1,
  stop: [],
};

describe('the SGLang client against SGLang 0.5.23 bodies', () => {
  it('sends model_path, flush_cache and weight_version; a 200 is a success', async () => {
    const { url, seen } = await replay({ 'POST /update_weights_from_disk': SGLANG.update_ok! });
    await expect(sglang(url).updateWeightsFromDisk('/ckpt/v7', { weightVersion: 7 })).resolves.toEqual({
      success: true,
      message: 'Succeeded to update model weights. Weight version updated to 7.',
    });
    expect(seen).toEqual([
      {
        route: 'POST /update_weights_from_disk',
        body: { model_path: '/ckpt/v7', flush_cache: true, weight_version: '7' },
      },
    ]);
  });

  it('a 400 from the update is a refusal with SGLang message, not an outage', async () => {
    for (const name of ['update_flush_failed', 'update_no_weights', 'update_load_failed']) {
      const { url } = await replay({ 'POST /update_weights_from_disk': SGLANG[name]! });
      await expect(sglang(url).updateWeightsFromDisk('/ckpt/v7')).resolves.toEqual({
        success: false,
        message: (SGLANG[name]!.json as { message: string }).message,
      });
    }
  });

  it('reads /flush_cache by its status (its body is text), and the weight version from /model_info', async () => {
    const ok = await replay({
      'POST /flush_cache': SGLANG.flush_cache_ok!,
      'GET /model_info': {
        status: 200,
        json: { model_path: '/ckpt/v7', weight_version: '7', is_generation: true },
      },
    });
    await expect(sglang(ok.url).flushCache()).resolves.toMatchObject({ success: true });
    await expect(sglang(ok.url).weightVersion()).resolves.toBe('7');
    const refused = await replay({ 'POST /flush_cache': SGLANG.flush_cache_refused! });
    await expect(sglang(refused.url).flushCache()).resolves.toEqual({
      success: false,
      message: 'Flush cache failed.',
    });
  });

  it('a request aborted by the pause keeps its tokens, logprobs and the version that sampled them', async () => {
    const { url } = await replay({ 'POST /generate': SGLANG.generate_aborted_by_pause! });
    const result = await sglang(url).generate(request);
    expect(result).toMatchObject({
      tokenIds: [27, 1015, 29],
      logprobs: [-0.25, -1.5, -0.75],
      finishReason: 'abort',
      policyVersion: 6,
    });
  });

  it('refuses an update answer of the wrong shape, naming the route', async () => {
    const { url } = await replay({ 'POST /update_weights_from_disk': { status: 200, json: { ok: 1 } } });
    await expect(sglang(url).updateWeightsFromDisk('/ckpt')).rejects.toMatchObject({
      code: 'ENGINE_BAD_RESPONSE',
    });
  });
});

describe('the vLLM client against vLLM 0.33.0 bodies', () => {
  it('pauses, resets the prefix cache, reloads from the folder, sets and reads the version, resumes', async () => {
    const { url, seen } = await replay({
      'POST /pause?mode=abort': VLLM.pause!,
      'POST /reset_prefix_cache': VLLM.reset_prefix_cache_ok!,
      'POST /collective_rpc': VLLM.collective_rpc_reload!,
      'POST /update_weight_version': VLLM.update_weight_version!,
      'GET /weight_info': VLLM.weight_info!,
      'POST /resume': VLLM.resume!,
    });
    const engine = vllm(url);
    await engine.pauseGeneration('abort');
    await expect(engine.flushCache()).resolves.toMatchObject({ success: true });
    await expect(engine.updateWeightsFromDisk('/ckpt/v7', { weightVersion: 7 })).resolves.toMatchObject({
      success: true,
    });
    await expect(engine.weightVersion()).resolves.toBe('7');
    await engine.continueGeneration();
    expect(seen.map((entry) => entry.route)).toEqual([
      'POST /pause?mode=abort',
      'POST /reset_prefix_cache',
      'POST /collective_rpc',
      'POST /update_weight_version',
      'GET /weight_info',
      'POST /resume',
    ]);
    expect(seen[2]!.body).toEqual({ method: 'reload_weights', kwargs: { weights_path: '/ckpt/v7' } });
    expect(seen[3]!.body).toEqual({ new_version: '7' });
  });

  it('a failed reload and held cache blocks are refusals, as values', async () => {
    const { url } = await replay({
      'POST /collective_rpc': VLLM.collective_rpc_failed!,
      'POST /reset_prefix_cache': VLLM.reset_prefix_cache_held!,
    });
    const engine = vllm(url);
    await expect(engine.updateWeightsFromDisk('/ckpt/v7', { weightVersion: 7 })).resolves.toMatchObject({
      success: false,
      message: expect.stringContaining('Cannot find any model weights'),
    });
    await expect(engine.flushCache()).resolves.toMatchObject({ success: false });
  });

  it('asks for weight versions; an aborted completion keeps its tokens and version; new requests wait for resume', async () => {
    const { url, seen } = await replay({
      'POST /v1/completions': VLLM.completion_aborted_by_pause!,
      'POST /pause?mode=abort': VLLM.pause!,
      'POST /resume': VLLM.resume!,
    });
    const engine = vllm(url);
    await expect(engine.generate(request)).resolves.toMatchObject({
      tokenIds: [27, 1015, 29],
      logprobs: [-0.25, -1.5, -0.75],
      finishReason: 'abort',
      policyVersion: 6,
    });
    expect(seen[0]!.body).toMatchObject({ return_weight_versions: true, return_token_ids: true });
    await engine.pauseGeneration('abort');
    const held = engine.generate(request);
    await engine.weightVersion().catch(() => null); // a round trip: the held request would have arrived by now
    expect(seen.filter((entry) => entry.route === 'POST /v1/completions')).toHaveLength(1);
    await engine.continueGeneration();
    await expect(held).resolves.toMatchObject({ finishReason: 'abort' });
    expect(seen.map((entry) => entry.route).slice(-2)).toEqual(['POST /resume', 'POST /v1/completions']);
  });
});
