import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { vllmLogprobsMode } from './vllm-logprobs-probe.ts';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

const LOGITS = [2.0, 1.2, 0.3, -0.5];

function logSoftmax(values: number[]): number[] {
  const top = Math.max(...values);
  const total = Math.log(values.reduce((sum, value) => sum + Math.exp(value - top), 0)) + top;
  return values.map((value) => value - total);
}

/**
 * vLLM 0.33.0's `/v1/completions` with `logprobs: 2` over fixed first-position logits:
 * `raw_logprobs` (its default) takes log-softmax of the logits as they are, `processed_logprobs`
 * of the logits divided by the request's temperature (`vllm/v1/sample/sampler.py`); the top
 * logprobs come back as `choices[0].logprobs.top_logprobs[0]` ({token: logprob}).
 */
async function scriptedVllm(mode: 'raw_logprobs' | 'processed_logprobs'): Promise<string> {
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => {
      text += chunk;
    });
    request.on('end', () => {
      const body = JSON.parse(text) as { temperature: number; logprobs: number };
      const scaled = mode === 'raw_logprobs' ? LOGITS : LOGITS.map((value) => value / body.temperature);
      const logprobs = logSoftmax(scaled);
      const top = Object.fromEntries(
        logprobs.slice(0, body.logprobs).map((value, index) => [`token_id:${index}`, value]),
      );
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.end(
        JSON.stringify({
          object: 'text_completion',
          choices: [
            {
              index: 0,
              text: 'x',
              finish_reason: 'length',
              logprobs: {
                text_offset: [0],
                token_logprobs: [logprobs[0]],
                tokens: ['token_id:0'],
                top_logprobs: [top],
              },
            },
          ],
        }),
      );
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("vLLM's logprobs mode, from two one-token requests", () => {
  it('tells the default raw logprobs from temperature-scaled ones', async () => {
    for (const temperature of [0.6, 1.4]) {
      expect(
        await vllmLogprobsMode({
          url: await scriptedVllm('raw_logprobs'),
          promptTokenIds: [1, 2],
          temperature,
        }),
      ).toBe('raw');
      expect(
        await vllmLogprobsMode({
          url: await scriptedVllm('processed_logprobs'),
          promptTokenIds: [1, 2],
          temperature,
        }),
      ).toBe('processed');
    }
  });

  it('says unknown when the server gives no top logprobs', async () => {
    expect(await vllmLogprobsMode({ url: 'http://127.0.0.1:9', promptTokenIds: [1], temperature: 0.6 })).toBe(
      'unknown',
    );
  });
});
