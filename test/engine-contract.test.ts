/**
 * The shared contract suite of the engine clients, run against each client and a scripted
 * server speaking that client's real wire format on loopback.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createByteLevelTokenizer,
  createEngine,
  type EngineOptions,
  type GenerateRequest,
  type HttpEngine,
  retryAdvice,
} from '../src/engine/index.ts';
import {
  type ScriptedServer,
  scriptedLogprob,
  startScriptedServer,
} from './fixtures/scripted-engine-server.ts';

const tokenizer = createByteLevelTokenizer();
const SCRIPT = 'Compute it.\n<code>\nprint(6*7)\n</code>\n<interpreter>';
const STOP = '</code>';

/**
 * `reportsStop`: whether the server names the stop string that ended generation. The OpenAI
 * flavors answer like the official API, which does not: the client then reports no matched
 * stop and `stopUnreported` (the agent loop decides from the text).
 */
type Case = { api: EngineOptions['api']; tokenLevel: boolean; reportsStop: boolean };
const cases: Case[] = [
  { api: 'sglang', tokenLevel: true, reportsStop: true },
  { api: 'vllm', tokenLevel: true, reportsStop: true },
  { api: 'openai', tokenLevel: false, reportsStop: false },
  { api: 'openai-chat', tokenLevel: false, reportsStop: false },
];

function request(overrides: Partial<GenerateRequest> = {}): GenerateRequest {
  const promptText = '<|user|>\nWhat is 6*7?\n<|assistant|>\n';
  return {
    promptTokenIds: tokenizer.encode(promptText),
    promptText,
    maxNewTokens: 256,
    temperature: 0.7,
    topP: 0.95,
    stop: [STOP],
    seed: 1234,
    ...overrides,
  };
}

describe.each(cases)('engine contract: $api', ({ api, tokenLevel, reportsStop }) => {
  /** What a client says about a stop string the server trimmed. */
  const trimmedStop = reportsStop ? { matchedStop: STOP } : { matchedStop: null, stopUnreported: true };

  const servers: ScriptedServer[] = [];
  const engines: HttpEngine[] = [];

  afterEach(async () => {
    for (const engine of engines.splice(0)) engine.close();
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });

  async function setup(
    behavior: Parameters<typeof startScriptedServer>[1] = {},
    options: Partial<EngineOptions> = {},
  ): Promise<{ server: ScriptedServer; engine: HttpEngine }> {
    const server = await startScriptedServer(api, { script: SCRIPT, ...behavior });
    servers.push(server);
    const engine = createEngine({
      api,
      url: server.url,
      model: 'scripted-model',
      timeoutMs: 10_000,
      ...options,
    } as EngineOptions);
    engines.push(engine);
    return { server, engine };
  }

  it('stops on a stop string, reporting it, and keeps it in text when asked', async () => {
    const { server, engine } = await setup({}, { includeStopInOutput: true });
    const result = await engine.generate(request());
    expect(result.finishReason).toBe('stop');
    expect(result).toMatchObject(trimmedStop);
    const before = SCRIPT.slice(0, SCRIPT.indexOf(STOP));
    if (tokenLevel) {
      expect(result.text).toBe(before + STOP);
      expect(result.stopIncluded).toBe(true);
      expect(tokenizer.decode(result.tokenIds!)).toBe(before + STOP);
    } else {
      // OpenAI-compatible servers always trim the stop string.
      expect(result.text).toBe(before);
      expect(result.stopIncluded).toBe(false);
      expect(result.tokenIds).toBeNull();
    }
    const sent = server.requests[0]!.body;
    if (api === 'sglang') {
      expect(sent.input_ids).toEqual(request().promptTokenIds);
      expect(sent.return_logprob).toBe(true);
      expect(sent.sampling_params).toMatchObject({
        max_new_tokens: 256,
        temperature: 0.7,
        top_p: 0.95,
        stop: [STOP],
        no_stop_trim: true,
        sampling_seed: 1234,
      });
    } else if (api === 'vllm') {
      expect(sent).toMatchObject({
        prompt: request().promptTokenIds,
        max_tokens: 256,
        stop: [STOP],
        include_stop_str_in_output: true,
        return_token_ids: true,
        return_tokens_as_token_ids: true,
        logprobs: 0,
        seed: 1234,
        model: 'scripted-model',
      });
    } else if (api === 'openai') {
      expect(sent).toMatchObject({
        model: 'scripted-model',
        prompt: request().promptText,
        max_tokens: 256,
        seed: 1234,
      });
    } else {
      expect(sent.messages).toEqual([{ role: 'user', content: request().promptText }]);
    }
  });

  it('reports a trimmed stop string with stopIncluded=false', async () => {
    const { engine } = await setup({}, { includeStopInOutput: false });
    const result = await engine.generate(request());
    const before = SCRIPT.slice(0, SCRIPT.indexOf(STOP));
    expect(result.finishReason).toBe('stop');
    expect(result).toMatchObject(trimmedStop);
    expect(result.stopIncluded).toBe(false);
    expect(result.text).toBe(before);
    // Token engines still return the stop string's tokens: ids are never trimmed.
    if (tokenLevel) expect(tokenizer.decode(result.tokenIds!)).toBe(before + STOP);
  });

  it('finishes with length at maxNewTokens', async () => {
    const { engine } = await setup();
    const result = await engine.generate(request({ maxNewTokens: 5 }));
    expect(result.finishReason).toBe('length');
    expect(result.matchedStop).toBeNull();
    expect(result.text).toBe(SCRIPT.slice(0, 5));
    if (tokenLevel) expect(result.tokenIds).toEqual(tokenizer.encode(SCRIPT.slice(0, 5)));
  });

  it('finishes with stop and no matched stop at EOS', async () => {
    const { engine } = await setup({ script: 'The answer is \\boxed{42}.' });
    const result = await engine.generate(request({ stop: [] }));
    expect(result.finishReason).toBe('stop');
    expect(result.matchedStop).toBeNull();
    expect(result.text).toBe('The answer is \\boxed{42}.');
    if (tokenLevel) expect(result.tokenIds!.at(-1)).toBe(256);
  });

  it('returns one logprob per token (token engines) or null (text engines)', async () => {
    const { engine } = await setup();
    const result = await engine.generate(request());
    if (tokenLevel) {
      expect(result.logprobs).toHaveLength(result.tokenIds!.length);
      expect(result.logprobs).toEqual(result.tokenIds!.map((_, index) => scriptedLogprob(index)));
    } else {
      expect(result.logprobs).toBeNull();
    }
  });

  it('resolves with finishReason abort when the signal fires mid-request, closing the connection', async () => {
    const { server, engine } = await setup({ delayMs: 30_000 });
    const controller = new AbortController();
    const pending = engine.generate(request(), controller.signal);
    await waitFor(() => server.requests.length === 1);
    controller.abort();
    const result = await pending;
    expect(result.finishReason).toBe('abort');
    expect(result.text).toBe('');
    await waitFor(() => server.closedEarly === 1);
  });

  it('does not send a request whose signal already aborted', async () => {
    const { server, engine } = await setup();
    const result = await engine.generate(request(), AbortSignal.abort());
    expect(result.finishReason).toBe('abort');
    expect(server.requests).toHaveLength(0);
  });

  it('makes one attempt per call: a 5xx is thrown as retryable, and the next call succeeds', async () => {
    const { server, engine } = await setup({ failFirst: 1 });
    await expect(engine.generate(request())).rejects.toMatchObject({
      code: 'ENGINE_HTTP_5XX',
      status: 503,
      retryable: true,
    });
    expect(server.requests).toHaveLength(1);
    const result = await engine.generate(request());
    expect(result).toMatchObject(trimmedStop);
    expect(server.requests).toHaveLength(2);
  });

  it("reports a 429 as retryable with the server's Retry-After", async () => {
    const { server, engine } = await setup({ rateLimitFirst: 1, retryAfterSeconds: 7 });
    const failure = engine.generate(request());
    await expect(failure).rejects.toMatchObject({ code: 'ENGINE_HTTP_4XX', status: 429, retryable: true });
    const error: unknown = await failure.catch((caught: unknown) => caught);
    expect(retryAdvice(error)).toEqual({ retryable: true, retryAfterMs: 7_000 });
    expect(server.requests).toHaveLength(1);
  });

  it('does not retry a 4xx answer and says what the server said', async () => {
    const { server, engine } = await setup({ clientErrorStatus: 400 });
    const failure = engine.generate(request());
    await expect(failure).rejects.toMatchObject({ code: 'ENGINE_HTTP_4XX', status: 400, retryable: false });
    await expect(failure).rejects.toThrow(/maximum context length/);
    expect(server.requests).toHaveLength(1);
  });

  it('throws a refused connection as retryable ENGINE_UNAVAILABLE with the cause', async () => {
    const url = await closedPortUrl();
    const engine = createEngine({ api, url, model: 'm' });
    engines.push(engine);
    const failure = engine.generate(request());
    await expect(failure).rejects.toMatchObject({
      code: 'ENGINE_UNAVAILABLE',
      retryable: true,
      cause: { code: 'ECONNREFUSED' },
    });
    await expect(failure).rejects.toThrow(/ECONNREFUSED/);
  });

  it('throws ENGINE_TIMEOUT (retryable) when the server is too slow, after one attempt', async () => {
    const { server, engine } = await setup({ delayMs: 30_000 }, { timeoutMs: 150 });
    await expect(engine.generate(request())).rejects.toMatchObject({
      code: 'ENGINE_TIMEOUT',
      timeoutMs: 150,
    });
    expect(server.requests).toHaveLength(1);
  });

  it('keeps at most maxConcurrency requests in flight', async () => {
    const { server, engine } = await setup({ delayMs: 50 }, { maxConcurrency: 2 });
    const results = await Promise.all(Array.from({ length: 6 }, () => engine.generate(request())));
    for (const result of results) expect(result).toMatchObject(trimmedStop);
    expect(server.requests).toHaveLength(6);
    expect(server.maxInFlight).toBe(2);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A loopback URL where nothing listens (a port just released). */
async function closedPortUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
