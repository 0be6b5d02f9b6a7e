import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { renderPrefixCacheBench, runPrefixCacheBench } from './prefix-cache-bench.ts';

/** An engine's `/generate` as the bench uses it: greedy ids (here the prompt's length, repeated), and meta_info.cached_tokens. */
function engine(
  cached: (inputIds: number[]) => number,
): Promise<{ server: Server; url: string; prompts: number[][] }> {
  const prompts: number[][] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      const { input_ids: inputIds, sampling_params: params } = JSON.parse(body) as {
        input_ids: number[];
        sampling_params: { max_new_tokens: number };
      };
      prompts.push(inputIds);
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.end(
        JSON.stringify({
          text: '',
          output_ids: Array.from({ length: params.max_new_tokens }, () => inputIds.length % 50),
          meta_info: { cached_tokens: cached(inputIds) },
        }),
      );
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, prompts }),
    ),
  );
}

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

describe('bench prefix-cache', () => {
  it("sends each turn the last turn's prompt, output and interpreter tokens, and counts the cached share", async () => {
    const plain = await engine(() => 0);
    const cached = await engine((ids) => ids.length - 1);
    servers.push(plain.server, cached.server);
    const report = await runPrefixCacheBench({
      baselineUrl: plain.url,
      cachedUrl: cached.url,
      headers: { 'Content-Type': 'application/json' },
      vocabulary: 100,
      conversations: 2,
      turns: 3,
      systemTokens: 10,
      problemTokens: 5,
      newTokens: 4,
      toolTokens: 3,
      rounds: 2,
    });
    // 2 rounds × 2 conversations × 3 turns on each engine, the same prompts on both.
    expect(plain.prompts).toHaveLength(12);
    expect(cached.prompts.map((ids) => ids.join(',')).sort()).toEqual(
      plain.prompts.map((ids) => ids.join(',')).sort(),
    );
    expect(plain.prompts.map((ids) => ids.length).sort((a, b) => a - b)).toEqual([
      15, 15, 15, 15, 22, 22, 22, 22, 29, 29, 29, 29,
    ]);
    // Every prompt begins with the one system prompt; a next turn extends its last prompt.
    const system = plain.prompts[0]!.slice(0, 10);
    for (const ids of plain.prompts) expect(ids.slice(0, 10)).toEqual(system);
    const firsts = plain.prompts.filter((ids) => ids.length === 15).map((ids) => ids.join(','));
    expect(new Set(firsts).size).toBe(4); // each round has its own problems
    for (const ids of plain.prompts.filter((prompt) => prompt.length === 22)) {
      expect(firsts).toContain(ids.slice(0, 15).join(','));
      expect(ids.slice(15, 19)).toEqual([15, 15, 15, 15]); // the first turn's output
    }
    expect(report.baseline.cachedShare).toBe(0);
    expect(report.cached.cachedShare).toBeCloseTo((14 + 21 + 28) / (15 + 22 + 29), 10);
    expect(report.greedyAgreement).toEqual({ same: 2, of: 2 });
    expect(report.speedup).toBeGreaterThan(0);
    expect(renderPrefixCacheBench(report)).toContain('greedy tokens equal in 2 of 2 conversations');
  });
});
