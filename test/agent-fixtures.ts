/**
 * Test doubles for the agent loop's tests: a scripted model (its continuation is a pure
 * function of the context, so a run cut into segments produces the same tokens as one that
 * is not), an in-process engine and a real HTTP server speaking SGLang's `/generate` over it,
 * a function-backed sandbox, and small helpers.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Tokenizer } from '../src/engine/tokenizer.ts';
import type { Engine, GenerateRequest, GenerateResult } from '../src/engine/types.ts';
import type { ExecutionOutcome, SandboxProvider, SandboxSession } from '../src/sandbox/types.ts';

/** One part of a scripted response: the model text up to (and including) a code block's end. */
export type ScriptPart = string | ((toolOutput: string) => string);

export type ScriptedModelOptions = {
  parts: readonly ScriptPart[];
  /** The tool output block's delimiters, to count tool results and read the last one. */
  toolOpen?: string;
  toolClose?: string;
  /** Where the response starts in the context (the chat template's assistant header). */
  responseMarker?: string;
};

/**
 * The scripted model's continuation for a context: the rest of the current part (the part
 * index is the number of tool results seen), and whether that part is the last one.
 */
export function scriptedContinuation(
  context: string,
  {
    parts,
    toolOpen = '<interpreter>',
    toolClose = '</interpreter>',
    responseMarker = '<|assistant|>\n',
  }: ScriptedModelOptions,
): { text: string; last: boolean } {
  const markerAt = context.lastIndexOf(responseMarker);
  if (markerAt === -1) throw new Error(`scripted model: no "${responseMarker}" in the context`);
  const pieces = context.slice(markerAt + responseMarker.length).split(toolClose);
  const index = pieces.length - 1;
  const previous = pieces[index - 1] ?? '';
  const toolOutput = index === 0 ? '' : previous.slice(previous.lastIndexOf(toolOpen) + toolOpen.length);
  const part = parts[index];
  if (part === undefined) throw new Error(`scripted model: no part ${index}`);
  const text = typeof part === 'string' ? part : part(toolOutput);
  const written = index === 0 ? (pieces[0] ?? '') : (pieces[index] ?? '').replace(/^\s+/, '');
  if (!text.startsWith(written)) {
    throw new Error(`scripted model: the context diverged from part ${index}: ${JSON.stringify(written)}`);
  }
  return { text: text.slice(written.length), last: index === parts.length - 1 };
}

export type ScriptedGeneration = {
  tokenIds: number[];
  text: string;
  finish: { type: 'stop'; matched: string | number } | { type: 'length'; length: number };
};

/**
 * Generates like a sampler would, but from the script: stops after the first stop string
 * (its tokens included), at the end of the last part (EOS), or at `maxNewTokens`.
 */
export function generateScripted(
  context: string,
  request: { maxNewTokens: number; stop: readonly string[] },
  model: ScriptedModelOptions,
  tokenizer: Tokenizer,
): ScriptedGeneration {
  const { text, last } = scriptedContinuation(context, model);
  let end = text.length;
  let matched: string | null = null;
  for (const stop of request.stop) {
    const at = text.indexOf(stop);
    if (at !== -1 && at + stop.length <= end) {
      end = at + stop.length;
      matched = stop;
    }
  }
  // Past the end of a part without a stop in this call (the stop began in an earlier call, which
  // no engine sees), a model would ramble on: write filler until the token limit.
  const rambling = matched === null && !last;
  const ids = tokenizer.encode(
    rambling ? `${text}\n${'and so on '.repeat(request.maxNewTokens)}` : text.slice(0, end),
  );
  const eos = tokenizer.eosTokenId ?? 256;
  const wantsEos = matched === null && last;
  const all = wantsEos ? [...ids, eos] : ids;
  if (all.length > request.maxNewTokens) {
    const tokenIds = all.slice(0, request.maxNewTokens);
    return {
      tokenIds,
      text: tokenizer.decode(tokenIds),
      finish: { type: 'length', length: tokenIds.length },
    };
  }
  return { tokenIds: all, text: tokenizer.decode(ids), finish: { type: 'stop', matched: matched ?? eos } };
}

/** Deterministic stand-in logprobs from the seed and the position. */
export function seededLogprob(seed: number, position: number, tokenId: number): number {
  return -(((seed * 31 + position * 17 + tokenId) % 97) + 1) / 100;
}

export type ScriptedEngineOptions = {
  model: ScriptedModelOptions;
  tokenizer: Tokenizer;
  /** Trim a matched stop string from `text` (tokens keep it), as engines do by default. */
  trimStop?: boolean;
  /** Text only: answer with `tokenIds: null` (an OpenAI-style engine). */
  textOnly?: boolean;
  /** Called before each generation (0-based); throw to fail the call, or return a promise to delay it. */
  before?: (call: number, request: GenerateRequest) => void | Promise<void>;
};

/** An in-process engine over a scripted model, with the byte tokenizer. */
export class ScriptedEngine implements Engine {
  readonly name = 'scripted';
  readonly requests: GenerateRequest[] = [];
  readonly #options: ScriptedEngineOptions;

  constructor(options: ScriptedEngineOptions) {
    this.#options = options;
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    const { model, tokenizer, trimStop = false, textOnly = false, before } = this.#options;
    // The loop passes its live context array; keep a copy of what this call saw.
    this.requests.push({ ...request, promptTokenIds: [...request.promptTokenIds] });
    await before?.(this.requests.length - 1, request);
    const context = textOnly ? (request.promptText ?? '') : tokenizer.decode(request.promptTokenIds);
    const generation = generateScripted(context, request, model, tokenizer);
    const matchedStop =
      generation.finish.type === 'stop' && typeof generation.finish.matched === 'string'
        ? generation.finish.matched
        : null;
    const text =
      trimStop && matchedStop !== null ? generation.text.slice(0, -matchedStop.length) : generation.text;
    const seed = request.seed ?? 0;
    return {
      tokenIds: textOnly ? null : generation.tokenIds,
      text,
      logprobs: textOnly
        ? null
        : generation.tokenIds.map((id, index) =>
            seededLogprob(seed, request.promptTokenIds.length + index, id),
          ),
      finishReason: generation.finish.type,
      matchedStop,
      stopIncluded: matchedStop !== null && !trimStop,
      policyVersion: 0,
    };
  }
}

export type SglangServerOptions = {
  model: ScriptedModelOptions;
  tokenizer: Tokenizer;
  /** Decides how to answer request number `call` (0-based): normally, with an HTTP error, or never. */
  behaviour?: (call: number) => 'answer' | 'fail' | 'reject' | 'hang';
  /** Awaited before answering request `call` whose decoded context is `context` (controllable latency). */
  gate?: (call: number, context: string) => Promise<void>;
  /** Sent as `meta_info.weight_version` (the policy version), as SGLang does after a weight update. */
  weightVersion?: () => string;
  /**
   * The served model's context, as SGLang 0.5.23 has one: said by `GET /v1/models`
   * (`max_model_len`, http_server.py's ModelCard), and a request whose input plus
   * `max_new_tokens` exceeds it refused with 400 and SGLang's message
   * (tokenizer_manager.py `_validate_one_request`). Without it, neither.
   */
  contextLength?: number;
};

/**
 * A real HTTP server speaking SGLang's native `/generate`: `input_ids` and `sampling_params`
 * in; `text`, `output_ids` and `meta_info` (finish_reason, output_token_logprobs) out.
 */
export async function startScriptedSglangServer(
  options: SglangServerOptions,
): Promise<{ url: string; calls: () => number; close: () => Promise<void> }> {
  let calls = 0;
  const hanging = new Set<() => void>();
  const server: Server = createServer(async (request, response) => {
    const limit = options.contextLength;
    if (request.method === 'GET' && request.url === '/v1/models' && limit !== undefined) {
      response.writeHead(200, { 'content-type': 'application/json' });
      const card = {
        id: 'scripted',
        object: 'model',
        owned_by: 'sglang',
        root: 'scripted',
        max_model_len: limit,
      };
      response.end(JSON.stringify({ object: 'list', data: [card] }));
      return;
    }
    if (request.method !== 'POST' || request.url !== '/generate') {
      response.writeHead(404).end();
      return;
    }
    const call = calls++;
    const body = JSON.parse(await readBody(request)) as {
      input_ids: number[];
      sampling_params: {
        max_new_tokens: number;
        stop?: string[];
        no_stop_trim?: boolean;
        sampling_seed?: number;
      };
    };
    const total = body.input_ids.length + body.sampling_params.max_new_tokens;
    if (limit !== undefined && total > limit) {
      response.writeHead(400, { 'content-type': 'application/json' });
      const message =
        `Requested token count exceeds the model's maximum context length of ${limit} tokens. You requested a ` +
        `total of ${total} tokens: ${body.input_ids.length} tokens from the input messages and ` +
        `${body.sampling_params.max_new_tokens} tokens for the completion. Please reduce the number of tokens in ` +
        'the input messages or the completion to fit within the limit.';
      response.end(JSON.stringify({ error: { message } }));
      return;
    }
    const behaviour = options.behaviour?.(call) ?? 'answer';
    if (behaviour === 'hang') {
      hanging.add(() => response.destroy());
      return;
    }
    if (behaviour === 'reject') {
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ error: { message: 'the input is longer than the context length', code: 400 } }),
      );
      return;
    }
    if (behaviour === 'fail') {
      response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: 'scripted failure', code: 500 } }));
      return;
    }
    const params = body.sampling_params;
    const context = options.tokenizer.decode(body.input_ids);
    await options.gate?.(call, context);
    const generation = generateScripted(
      context,
      { maxNewTokens: params.max_new_tokens, stop: params.stop ?? [] },
      options.model,
      options.tokenizer,
    );
    const matched = generation.finish.type === 'stop' ? generation.finish.matched : null;
    const text =
      typeof matched === 'string' && params.no_stop_trim !== true
        ? generation.text.slice(0, -matched.length)
        : generation.text;
    const seed = params.sampling_seed ?? 0;
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        text,
        output_ids: generation.tokenIds,
        meta_info: {
          id: `req-${call}`,
          finish_reason: generation.finish,
          prompt_tokens: body.input_ids.length,
          completion_tokens: generation.tokenIds.length,
          cached_tokens: 0,
          ...(options.weightVersion === undefined ? {} : { weight_version: options.weightVersion() }),
          output_token_logprobs: generation.tokenIds.map((id, index) => [
            seededLogprob(seed, body.input_ids.length + index, id),
            id,
            null,
          ]),
          e2e_latency: 0.001,
        },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls: () => calls,
    close: async () => {
      for (const destroy of hanging) destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A sandbox double: each session keeps a `Map` the handler may use as its "Python state". */
export function functionSandbox(
  handler: (code: string, state: Map<string, unknown>) => ExecutionOutcome | Promise<ExecutionOutcome>,
): SandboxProvider & { opened: number; closed: number; executed: string[] } {
  const provider = {
    opened: 0,
    closed: 0,
    executed: [] as string[],
    async openSession(): Promise<SandboxSession> {
      provider.opened += 1;
      const state = new Map<string, unknown>();
      let closed = false;
      return {
        id: `fake-${provider.opened}`,
        async execute(code: string) {
          if (closed) throw new Error('session closed');
          provider.executed.push(code);
          return handler(code, state);
        },
        async close() {
          if (!closed) provider.closed += 1;
          closed = true;
        },
      };
    },
    async close() {},
  };
  return provider;
}

/** A small deterministic PRNG (mulberry32) for seeded scripts. */
export function seededRandom(seed: number): () => number {
  let value = seed >>> 0;
  return () => {
    value = (value + 0x6d2b79f5) >>> 0;
    let t = value;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
