/**
 * A scripted inference server for RL tests that behaves, on every route a weight sync uses, as
 * SGLang 0.5.23 or vLLM 0.33.0 does (their files and lines: fixtures/sglang-0.5.23-control-
 * bodies.json, fixtures/vllm-0.33.0-rl-bodies.json, docs/engines.md), with scripted generation:
 * each request's text is the script's answer to the problem in its prompt, tokenized with the
 * model's tokenizer and sampled one token every `tokenDelayMs` (logprob −0.5 each), ending with
 * EOS. A prompt that continues an earlier request's tokens (a resubmission after an abort)
 * continues that request's script.
 *
 * SGLang: `/pause_generation` abort (running requests answer their tokens so far with
 * `finish_reason: abort`), in_place (they stop and keep their KV cache), retract (they stop and
 * drop it); new requests wait until `/continue_generation`. `/flush_cache` is refused while a
 * request holds its cache, or waits unpaused. `/update_weights_from_disk` waits for running
 * requests unless paused, loads (a folder without config.json and *.safetensors is refused with
 * SGLang's 400), then flushes: when that flush fails it answers 400 (0.5.23) or, with
 * `flushFailure: 'assert'` (SGLang before 0.5.23, whose scheduler asserts), the server dies.
 * vLLM: `/pause?mode=abort|keep` (new requests get 503 in abort mode), `/reset_prefix_cache`,
 * `/collective_rpc reload_weights`, `/update_weight_version`, `/weight_info`, `/resume`.
 */
import { existsSync, readdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import type { Tokenizer } from '../src/engine/tokenizer.ts';

export type ScriptedRlEngineOptions = {
  api: 'sglang' | 'vllm';
  tokenizer: Tokenizer;
  /** The text answering a new prompt (not called for a resubmitted one, which continues its script). */
  answer: (promptText: string) => string;
  tokenDelayMs: number;
  /** Every weight load fails as a load of mismatched tensors does. */
  refuseLoads?: boolean;
  /** What a failed flush after a load does: SGLang 0.5.23's 400, or the older assert. */
  flushFailure?: 'answer' | 'assert';
  /**
   * vLLM's `--logprobs-mode` (default `raw_logprobs`, as vLLM 0.33.0's): the `logprobs: k` top
   * alternatives of each position are log-softmax of fixed logits, divided by the request's
   * temperature only in `processed_logprobs` (`vllm/v1/sample/sampler.py`).
   */
  logprobsMode?: 'raw_logprobs' | 'processed_logprobs';
};

const ALTERNATIVE_LOGITS = [2.0, 1.2, 0.3, -0.5];

export type ScriptedRlEngine = {
  url: string;
  /** Control routes in the order they came (`pause abort`, `flush 200`, `update 400`, …). */
  log: string[];
  /** Requests answered `abort` because of a pause (their tokens kept). */
  preempted: () => number;
  close: () => Promise<void>;
};

type Running = {
  prompt: number[];
  script: number[];
  made: number[];
  versions: string[];
  maxNewTokens: number;
  holdsCache: boolean;
  finish: (reason: 'stop' | 'length' | 'abort') => void;
};

const FLUSH_FAILED_AFTER_UPDATE =
  'Weights were updated, but the cache was not flushed because requests are still running or queued. Retract or finish them, then call /flush_cache.';

export async function startScriptedRlEngine(options: ScriptedRlEngineOptions): Promise<ScriptedRlEngine> {
  const { api, tokenizer, tokenDelayMs } = options;
  const eos = tokenizer.eosTokenId ?? 0;
  const log: string[] = [];
  const running = new Set<Running>();
  const issued: { prompt: number[]; script: number[] }[] = [];
  let waiting: (() => void)[] = [];
  let paused: 'abort' | 'in_place' | 'retract' | 'keep' | null = null;
  let updating = false;
  let version = '0';
  let preempted = 0;
  const sockets = new Set<Socket>();

  const tick = setInterval(() => {
    if (paused !== null) return;
    for (const request of [...running]) {
      request.made.push(request.script[request.made.length] ?? eos);
      request.versions.push(version);
      request.holdsCache = true;
      if (request.made.at(-1) === eos) request.finish('stop');
      else if (request.made.length >= request.maxNewTokens) request.finish('length');
    }
  }, tokenDelayMs);

  /** Waits while paused (SGLang; vLLM in keep mode) or while an unpaused update holds the lock. */
  const admitted = () =>
    paused === null && !updating ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve));
  const release = () => {
    const held = waiting;
    waiting = [];
    for (const resolve of held) resolve();
  };
  const drained = async () => {
    while (running.size > 0) await new Promise((resolve) => setTimeout(resolve, tokenDelayMs));
  };
  const holdingCache = () => [...running].filter((request) => request.holdsCache).length;

  function scriptFor(prompt: number[]): { script: number[]; offset: number } {
    for (const entry of issued) {
      const rest = prompt.slice(entry.prompt.length);
      if (
        prompt.length > entry.prompt.length &&
        entry.prompt.every((id, index) => prompt[index] === id) &&
        rest.every((id, index) => entry.script[index] === id)
      ) {
        return { script: entry.script.slice(rest.length), offset: rest.length };
      }
    }
    const script = [...tokenizer.encode(options.answer(tokenizer.decode(prompt))), eos];
    issued.push({ prompt, script });
    return { script, offset: 0 };
  }

  async function generate(prompt: number[], maxNewTokens: number) {
    await admitted();
    const { script } = scriptFor(prompt);
    return new Promise<{ made: number[]; versions: string[]; reason: 'stop' | 'length' | 'abort' }>(
      (resolve) => {
        const request: Running = {
          prompt,
          script,
          made: [],
          versions: [],
          maxNewTokens,
          holdsCache: false,
          finish: (reason) => {
            running.delete(request);
            resolve({ made: request.made, versions: request.versions, reason });
          },
        };
        running.add(request);
      },
    );
  }

  function spans(versions: string[]) {
    const out: { version: string; start: number; end: number }[] = [];
    versions.forEach((label, index) => {
      const last = out.at(-1);
      if (last !== undefined && last.version === label) last.end = index + 1;
      else out.push({ version: label, start: index, end: index + 1 });
    });
    return out.length > 0 ? out : [{ version, start: 0, end: 0 }];
  }

  /** SGLang's and vLLM's check of a folder before loading it; null when it holds weights. */
  function loadError(path: string): string | null {
    const hasWeights =
      existsSync(join(path, 'config.json')) &&
      readdirSync(path).some((name) => name.endsWith('.safetensors'));
    if (!hasWeights) return `Failed to get weights iterator: Cannot find any model weights with \`${path}\`.`;
    if (options.refuseLoads) {
      return 'Failed to update weights: The size of tensor a (64) must match the size of tensor b (128) at non-singleton dimension 0.\nRolling back to original weights.';
    }
    return null;
  }

  function abortAll() {
    for (const request of [...running]) {
      preempted++;
      request.finish('abort');
    }
  }

  async function sglangRoute(
    method: string,
    path: string,
    body: Record<string, unknown>,
    response: ServerResponse,
  ) {
    const json = (status: number, payload: unknown) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    const text = (status: number, payload: string) =>
      response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(payload);
    if (path === '/health') return text(200, '');
    if (path === '/model_info' || path === '/get_model_info') {
      return json(200, { model_path: 'scripted', weight_version: version, is_generation: true });
    }
    if (path === '/generate') {
      const sampling = (body.sampling_params ?? {}) as { max_new_tokens?: number };
      const out = await generate(body.input_ids as number[], sampling.max_new_tokens ?? 128);
      return json(200, {
        text: tokenizer.decode(out.made),
        output_ids: out.made,
        meta_info: {
          id: body.rid ?? 'scripted',
          finish_reason:
            out.reason === 'stop'
              ? { type: 'stop', matched: eos }
              : out.reason === 'length'
                ? { type: 'length', length: out.made.length }
                : // SGLang 0.5.23: FINISH_ABORT("Aborted").to_json() (srt/managers/schedule_batch.py).
                  { type: 'abort', message: 'Aborted', status_code: null, err_type: null },
          prompt_tokens: (body.input_ids as number[]).length,
          weight_version: version,
          num_retractions: 0,
          completion_tokens: out.made.length,
          cached_tokens: 0,
          output_token_logprobs: out.made.map((id) => [-0.5, id, null]),
          weight_versions: spans(out.versions),
        },
      });
    }
    if (path === '/pause_generation') {
      const mode = (body.mode as 'abort' | 'in_place' | 'retract' | undefined) ?? 'abort';
      log.push(`pause ${mode}`);
      paused = mode;
      if (mode === 'abort') abortAll();
      if (mode === 'retract') for (const request of running) request.holdsCache = false;
      return json(200, { message: 'Generation paused successfully.', status: 'ok' });
    }
    if (path === '/continue_generation') {
      log.push('continue');
      paused = null;
      release();
      return json(200, { message: 'Generation continued successfully.', status: 'ok' });
    }
    if (path === '/abort_request') {
      if (body.abort_all === true) abortAll();
      return response.writeHead(200).end();
    }
    if (path === '/flush_cache' && (method === 'GET' || method === 'POST')) {
      const ok = holdingCache() === 0 && (paused !== null || running.size === 0);
      log.push(`flush ${ok ? 200 : 400}`);
      return ok
        ? text(
            200,
            'Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n',
          )
        : text(400, 'Flush cache failed.\n');
    }
    if (path === '/update_weights_from_disk') {
      if (paused === null) {
        updating = true; // SGLang's writer lock: new requests wait, running ones finish
        await drained();
      }
      try {
        const failed = loadError(String(body.model_path));
        if (failed !== null) {
          log.push('update 400 (load failed)');
          return json(400, { success: false, message: failed, num_paused_requests: 0 });
        }
        if (body.flush_cache !== false && holdingCache() > 0) {
          if (options.flushFailure === 'assert') {
            log.push('update: assert flush_cache_success failed, server dies');
            for (const socket of sockets) socket.destroy();
            server.close();
            clearInterval(tick);
            return;
          }
          log.push('update 400 (flush failed)');
          return json(400, { success: false, message: FLUSH_FAILED_AFTER_UPDATE, num_paused_requests: 0 });
        }
        const given = body.weight_version === undefined ? null : String(body.weight_version);
        if (given !== null) version = given;
        log.push(`update 200 v${version}`);
        const suffix = given === null ? '' : ` Weight version updated to ${given}.`;
        return json(200, {
          success: true,
          message: `Succeeded to update model weights.${suffix}`,
          num_paused_requests: 0,
        });
      } finally {
        if (updating) {
          updating = false;
          release();
        }
      }
    }
    return json(404, { detail: 'Not Found' });
  }

  async function vllmRoute(
    method: string,
    path: string,
    query: URLSearchParams,
    body: Record<string, unknown>,
    response: ServerResponse,
  ) {
    const json = (status: number, payload: unknown) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    if (path === '/health') return response.writeHead(200).end();
    if (path === '/v1/completions') {
      if (paused === 'abort') {
        return json(503, {
          error: {
            message: 'Engine is paused; retry after /resume',
            type: 'ServiceUnavailableError',
            param: null,
            code: 503,
          },
        });
      }
      const out = await generate(body.prompt as number[], (body.max_tokens as number | undefined) ?? 16);
      return json(200, {
        id: 'cmpl-scripted',
        object: 'text_completion',
        created: 0,
        model: 'scripted',
        choices: [
          {
            index: 0,
            text: tokenizer.decode(out.made),
            logprobs: {
              text_offset: out.made.map((_, index) => index),
              token_logprobs: out.made.map(() => -0.5),
              tokens: out.made.map((id) => `token_id:${id}`),
              top_logprobs: out.made.map(() => alternatives(body)),
            },
            finish_reason: out.reason,
            stop_reason: null,
            token_ids: out.made,
            weight_versions: spans(out.versions),
          },
        ],
        usage: {
          prompt_tokens: (body.prompt as number[]).length,
          completion_tokens: out.made.length,
          total_tokens: 0,
        },
      });
    }
    if (path === '/pause' && method === 'POST') {
      const mode = query.get('mode') ?? 'abort';
      log.push(`pause ${mode}`);
      paused = mode === 'keep' ? 'keep' : 'abort';
      if (mode === 'abort') abortAll();
      return json(200, { status: 'paused' });
    }
    if (path === '/resume') {
      log.push('resume');
      paused = null;
      release();
      return json(200, { status: 'resumed' });
    }
    if (path === '/reset_prefix_cache') {
      const ok = holdingCache() === 0;
      log.push(`reset_prefix_cache ${ok}`);
      return json(200, { success: ok });
    }
    if (path === '/collective_rpc') {
      const kwargs = (body.kwargs ?? {}) as { weights_path?: string };
      const failed =
        body.method === 'reload_weights' ? loadError(String(kwargs.weights_path)) : 'unknown method';
      log.push(`reload ${failed === null ? 200 : 500}`);
      if (failed !== null) {
        return json(500, { error: { message: failed, type: 'InternalServerError', param: null, code: 500 } });
      }
      return json(200, { results: [null] });
    }
    if (path === '/update_weight_version') {
      version = String(body.new_version);
      log.push(`version ${version}`);
      return json(200, { success: true, new_version: version });
    }
    if (path === '/weight_info') return json(200, { weight_version: version });
    return json(404, { detail: 'Not Found' });
  }

  /** The `logprobs: k` best alternatives of a position, as the server's logprobs mode takes them. */
  function alternatives(body: Record<string, unknown>): Record<string, number> {
    const count = Number(body.logprobs ?? 0);
    const temperature = Number(body.temperature ?? 1);
    const logits =
      options.logprobsMode === 'processed_logprobs' && temperature > 0
        ? ALTERNATIVE_LOGITS.map((value) => value / temperature)
        : ALTERNATIVE_LOGITS;
    const top = Math.max(...logits);
    const total = Math.log(logits.reduce((sum, value) => sum + Math.exp(value - top), 0)) + top;
    return Object.fromEntries(
      logits.slice(0, count).map((value, index) => [`token_id:${index}`, value - total]),
    );
  }

  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => {
      raw += chunk.toString('utf8');
    });
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://scripted');
      const body = (raw === '' ? {} : JSON.parse(raw)) as Record<string, unknown>;
      const route =
        api === 'sglang'
          ? sglangRoute(request.method ?? 'GET', url.pathname, body, response)
          : vllmRoute(request.method ?? 'GET', url.pathname, url.searchParams, body, response);
      route.catch((error: unknown) => {
        if (!response.headersSent) response.writeHead(500).end(String(error));
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    log,
    preempted: () => preempted,
    close: async () => {
      clearInterval(tick);
      abortAll();
      release();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
