/**
 * Engine clients against response bodies captured in the shape of real servers (see
 * fixtures/engine-response-bodies.ts), served verbatim over loopback HTTP; plus malformed
 * bodies, text-API stop inference, and option validation.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  createEngine,
  type EngineOptions,
  type GenerateRequest,
  type HttpEngine,
} from '../src/engine/index.ts';
import {
  openAiChatBody,
  openAiCompletionBody,
  sglangAbortBody,
  sglangEosBody,
  sglangLengthBody,
  sglangStopStringBody,
  vllmChatBody,
  vllmEosWithoutTokenIdsBody,
  vllmStopStringBody,
} from './fixtures/engine-response-bodies.ts';
import { type ScriptedServer, startScriptedServer } from './fixtures/scripted-engine-server.ts';

const request: GenerateRequest = {
  promptTokenIds: [151644, 872, 198],
  promptText: 'Compute 6*7 with Python.',
  maxNewTokens: 64,
  temperature: 1,
  topP: 1,
  stop: ['</code>'],
};

const servers: ScriptedServer[] = [];
const engines: HttpEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) engine.close();
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function answerWith(
  api: EngineOptions['api'],
  fixedBody: unknown,
  options: Partial<EngineOptions> = {},
) {
  const server = await startScriptedServer(api, { fixedBody });
  servers.push(server);
  const engine = createEngine({
    api,
    url: server.url,
    model: 'm',
    ...options,
  } as EngineOptions);
  engines.push(engine);
  return engine.generate(request);
}

describe('real response bodies', () => {
  it('SGLang stop string: ids from output_ids, logprobs from output_token_logprobs, matched string', async () => {
    const result = await answerWith('sglang', sglangStopStringBody);
    expect(result).toEqual({
      tokenIds: sglangStopStringBody.output_ids,
      text: sglangStopStringBody.text,
      logprobs: sglangStopStringBody.meta_info.output_token_logprobs.map((entry) => entry[0]),
      finishReason: 'stop',
      matchedStop: '</code>',
      stopIncluded: true,
      policyVersion: null,
      // meta_info.cached_tokens: prompt tokens served from the prefix cache.
      cachedTokens: sglangStopStringBody.meta_info.cached_tokens,
    });
  });

  it('SGLang length without output_ids: ids from output_token_logprobs', async () => {
    const result = await answerWith('sglang', sglangLengthBody);
    expect(result.tokenIds).toEqual([10061, 752]);
    expect(result.logprobs).toEqual([-0.9, -0.3]);
    expect(result.finishReason).toBe('length');
    expect(result.matchedStop).toBeNull();
  });

  it('SGLang EOS (matched token id) has no matched stop string; a numeric weight_version is the policy version', async () => {
    const result = await answerWith('sglang', sglangEosBody);
    expect(result.finishReason).toBe('stop');
    expect(result.matchedStop).toBeNull();
    expect(result.stopIncluded).toBe(false);
    expect(result.policyVersion).toBe(3);
  });

  it('SGLang server-side abort maps to finishReason abort', async () => {
    const result = await answerWith('sglang', sglangAbortBody);
    expect(result.finishReason).toBe('abort');
    expect(result.tokenIds).toEqual([]);
  });

  it('vLLM: token_ids, token_logprobs, stop_reason', async () => {
    const result = await answerWith('vllm', vllmStopStringBody);
    const choice = vllmStopStringBody.choices[0]!;
    expect(result).toEqual({
      tokenIds: choice.token_ids,
      text: choice.text,
      logprobs: choice.logprobs.token_logprobs,
      finishReason: 'stop',
      matchedStop: '</code>',
      stopIncluded: true,
      policyVersion: null,
    });
  });

  it('vLLM without return_token_ids: ids parsed from "token_id:N" tokens; null stop_reason is EOS', async () => {
    const result = await answerWith('vllm', vllmEosWithoutTokenIdsBody);
    expect(result.tokenIds).toEqual([59, 79075, 90, 2983, 92]);
    expect(result.matchedStop).toBeNull();
  });

  it('OpenAI completions: no stop_reason → no guess, the stop is unreported', async () => {
    const result = await answerWith('openai', openAiCompletionBody);
    expect(result).toMatchObject({
      tokenIds: null,
      logprobs: null,
      matchedStop: null,
      stopIncluded: false,
      stopUnreported: true,
    });
    expect(result.text).toBe(openAiCompletionBody.choices[0]!.text);
  });

  it('OpenAI chat: message.content is the text', async () => {
    const result = await answerWith('openai-chat', openAiChatBody);
    expect(result.text).toBe('x = 6*7\nprint(x)\n');
    expect(result.finishReason).toBe('stop');
  });

  it('vLLM chat: stop_reason names the stop', async () => {
    const result = await answerWith('openai-chat', vllmChatBody);
    expect(result.matchedStop).toBe('</code>');
    expect(result.stopIncluded).toBe(false);
  });
});

describe('malformed answers', () => {
  it('throws ENGINE_BAD_RESPONSE naming the missing field', async () => {
    const failure = answerWith('sglang', { text: 'x', meta_info: {} });
    await expect(failure).rejects.toMatchObject({ code: 'ENGINE_BAD_RESPONSE' });
    await expect(failure).rejects.toThrow(/meta_info\.finish_reason/);
  });

  it('throws ENGINE_BAD_RESPONSE when logprobs and ids disagree in length', async () => {
    const body = structuredClone(sglangStopStringBody);
    body.output_ids.pop();
    await expect(answerWith('sglang', body)).rejects.toMatchObject({ code: 'ENGINE_BAD_RESPONSE' });
  });

  it('throws ENGINE_BAD_RESPONSE for vLLM tokens that are not token_id:N', async () => {
    const body = structuredClone(vllmEosWithoutTokenIdsBody);
    body.choices[0]!.logprobs.tokens[0] = '\\';
    await expect(answerWith('vllm', body)).rejects.toMatchObject({ code: 'ENGINE_BAD_RESPONSE' });
  });
});

describe('text API stop inference', () => {
  async function scripted(api: 'openai' | 'openai-chat', reportStopReason: boolean, stop: string[]) {
    const server = await startScriptedServer(api, { script: '```python\nprint(1)\n```\n', reportStopReason });
    servers.push(server);
    const engine = createEngine({ api, url: server.url, model: 'm' });
    engines.push(engine);
    return engine.generate({ ...request, stop });
  }

  it('uses the stop_reason a vLLM-compatible server reports, among several stops', async () => {
    const result = await scripted('openai', true, ['```\n', '</code>']);
    expect(result.matchedStop).toBe('```\n');
    expect(result.text).toBe('```python\nprint(1)\n');
  });

  it('reports no matched stop, and that it was unreported, when the server names none', async () => {
    const result = await scripted('openai-chat', false, ['```\n', '</code>']);
    expect(result.finishReason).toBe('stop');
    expect(result.matchedStop).toBeNull();
    expect(result.stopUnreported).toBe(true);
  });

  it('sends messages and continue_final_message for a trailing assistant message', async () => {
    const server = await startScriptedServer('openai-chat', { script: 'ok' });
    servers.push(server);
    const engine = createEngine({
      api: 'openai-chat',
      url: server.url,
      model: 'm',
      continueFinalMessage: true,
    });
    engines.push(engine);
    const messages = [
      { role: 'user' as const, content: 'Q' },
      {
        role: 'assistant' as const,
        content: '<code>\nprint(1)\n</code>\n<interpreter>\n1\n</interpreter>\n',
      },
    ];
    await engine.generate({ ...request, messages });
    expect(server.requests[0]!.body).toMatchObject({
      messages,
      continue_final_message: true,
      add_generation_prompt: false,
    });
  });

  it('refuses a text completion without promptText', async () => {
    const engine = createEngine({ api: 'openai', url: 'http://127.0.0.1:9', model: 'm' });
    engines.push(engine);
    const { promptText: _, ...withoutText } = request;
    await expect(engine.generate(withoutText)).rejects.toMatchObject({ code: 'ENGINE_BAD_REQUEST' });
  });
});

describe('createEngine options', () => {
  it('rejects unknown keys (strict) naming them', () => {
    expect(() =>
      createEngine({ api: 'sglang', url: 'http://x:1', timeout: 5 } as unknown as EngineOptions),
    ).toThrow(/timeout/);
  });

  it('requires a model for OpenAI-compatible APIs', () => {
    expect(() => createEngine({ api: 'openai', url: 'http://x:1' })).toThrow(/model/);
  });

  it('rejects a non-http url with ENGINE_CONFIG_INVALID', () => {
    try {
      createEngine({ api: 'vllm', url: 'ftp://x' });
      expect.unreachable();
    } catch (error) {
      expect(error).toMatchObject({ code: 'ENGINE_CONFIG_INVALID' });
    }
  });

  it('sends the API key as a bearer token', async () => {
    const server = await startScriptedServer('openai', { script: 'hi' });
    servers.push(server);
    const engine = createEngine({ api: 'openai', url: server.url, model: 'm', apiKey: 'sk-test' });
    engines.push(engine);
    await engine.generate({ ...request, stop: [] });
    expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-test');
  });
});
