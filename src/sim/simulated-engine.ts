/**
 * One simulated engine replica in virtual time, implementing `Engine`. It batches
 * continuously: requests wait in arrival order, join the running batch at an iteration
 * boundary while the batch is below `maxRunningRequests` and their KV fits, are prefilled
 * (only the tokens missing from this replica's prefix cache), then gain one token per decode
 * iteration (cost model in `engine-cost-model.ts`) until their planned output is out.
 * KV capacity counts cached blocks and the running sequences' own tokens; when the batch
 * would outgrow it, idle cached prefixes are evicted least recently used first, and then the
 * newest running sequence is preempted (its KV dropped, recomputed when it is readmitted).
 *
 * Iterations are not events: between arrivals and completions the batch is fixed, so the
 * replica computes how long the next stretch of iterations takes in closed form and sets one
 * timer; an arrival cuts the stretch at the end of the iteration in progress.
 *
 * Engine options beyond that: chunked prefill (`chunkedPrefillTokens`, `prefill-chunk.ts`: an
 * admitted prompt is prefilled a chunk an iteration beside the decode batch, instead of
 * stalling it for its whole length), a time-to-live on a waiting session's KV (`kvTtlMs`,
 * `kv-pins.ts`) and a host-memory tier for evicted blocks (`hostKv`).
 */

import type { Engine, GenerateRequest, GenerateResult } from '../engine/types.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { BlockKeyCache } from './block-key-cache.ts';
import { type CostModel, decodeMs, iterationsWithin, prefillMs } from './engine-cost-model.ts';
import { KvPins } from './kv-pins.ts';
import { nextPrefillChunk, type PendingPrefill } from './prefill-chunk.ts';
import { type BlockKey, joinedBlockKeys, PrefixCache } from './prefix-cache.ts';
import type { PolicyTurn, SimulatedPolicy } from './simulated-policy.ts';
import type { ScheduledEvent, VirtualClock } from './virtual-clock.ts';

export type SimulatedEngineOptions = {
  name: string;
  clock: VirtualClock;
  policy: SimulatedPolicy;
  costModel: CostModel;
  kvCapacityTokens: number;
  maxRunningRequests: number;
  /** Prefix-cache block size in tokens (default 16, vLLM's). */
  blockTokens?: number;
  /** Shared memory of block keys per trajectory (replicas of one cluster share one); default a private one. */
  keyCache?: BlockKeyCache;
  /** Whether the replica reuses cached prefixes (default true; the embedded worker does not). */
  prefixCaching?: boolean;
  /**
   * Where each trajectory's KV was last computed (replica and policy version); replicas of one
   * cluster share one, so re-prefill is told apart by cause. Default: a private one.
   */
  residence?: Map<string, { replica: string; version: number }>;
  /** Told of every stretch of work when it ends (for profiles of a step). */
  onStretch?: (stretch: StretchRecord) => void;
  /**
   * A host-memory tier for evicted KV (SGLang's HiCache): tokens it holds, and ms per token to
   * load a block back (PCIe) instead of prefilling it. Default none.
   */
  hostKv?: { capacityTokens: number; loadPerTokenMs: number };
  /**
   * Chunked prefill: at most this many prompt tokens are prefilled an iteration, beside the
   * decode batch (`prefill-chunk.ts`). Default off: an admitted prompt's whole prefill is added
   * to the iteration it joins, and the decode batch waits for it.
   */
  chunkedPrefillTokens?: number;
  /**
   * A time-to-live on a waiting session's KV (`kv-pins.ts`): a session's request that ends at a
   * stop string keeps its blocks pinned for this many ms or until the session's next request is
   * admitted here. Default off.
   */
  kvTtlMs?: number;
};

/** A stretch of work: a prefill and the decode iterations after it, with the batch fixed. */
export type StretchRecord = {
  startMs: number;
  ms: number;
  batch: number;
  /** KV tokens the batch held, on average over the stretch. */
  meanContextTokens: number;
  kvCapacityTokens: number;
};

/** Counters since the replica started; a caller takes differences for one step. */
export type SimulatedEngineMetrics = {
  requests: number;
  /** Prompt tokens of every request (once per request). */
  promptTokens: number;
  /** Prompt tokens found in the prefix cache at a request's first admission. */
  cachedTokens: number;
  /** Tokens prefilled in all, recomputation after preemption included. */
  prefillTokens: number;
  /** Prefilled tokens the trajectory had had computed before (on any replica). */
  reprefillTokens: number;
  /** Of those: recomputed after a preemption. */
  reprefillPreemptedTokens: number;
  /** Computed before on another replica (the router moved the trajectory). */
  reprefillMovedTokens: number;
  /** Computed here under older weights (dropped at the weight update). */
  reprefillWeightUpdateTokens: number;
  /** Computed here under these weights and evicted for room before the trajectory came back. */
  reprefillEvictedTokens: number;
  /** Tokens loaded back from the host-memory tier instead of being prefilled again. */
  hostLoadedTokens: number;
  preemptions: number;
  generatedTokens: number;
  /** Virtual ms spent in prefill and decode. */
  busyMs: number;
  /** Of `busyMs`: prefill (and loads from the host tier) at admission. */
  prefillMs: number;
  /** Of `prefillMs`: prefilling tokens the trajectory had had computed before (`reprefillTokens`). */
  reprefillMs: number;
  /** Decode iterations run (each one token for every sequence in the batch). */
  decodeIterations: number;
  /** With `kvTtlMs`: sessions whose next request found their pinned KV here. */
  kvPinsUsed: number;
  /** With `kvTtlMs`: pins released by their time-to-live before the session came back. */
  kvPinsExpired: number;
};

/** Every counter at zero. */
export function emptyEngineMetrics(): SimulatedEngineMetrics {
  return {
    requests: 0,
    promptTokens: 0,
    cachedTokens: 0,
    prefillTokens: 0,
    reprefillTokens: 0,
    reprefillPreemptedTokens: 0,
    reprefillMovedTokens: 0,
    reprefillWeightUpdateTokens: 0,
    reprefillEvictedTokens: 0,
    hostLoadedTokens: 0,
    preemptions: 0,
    generatedTokens: 0,
    busyMs: 0,
    prefillMs: 0,
    reprefillMs: 0,
    decodeIterations: 0,
    kvPinsUsed: 0,
    kvPinsExpired: 0,
  };
}

/** The request cannot fit this replica's KV cache even alone. */
export class KvCapacityExceededError extends AgentMathError {
  constructor(engine: string, tokens: number, capacity: number) {
    super(
      'ENGINE_BAD_REQUEST',
      `simulated engine ${engine}: a sequence of ${tokens} tokens does not fit its KV capacity of ${capacity} tokens`,
    );
  }
}

type Sequence = {
  request: GenerateRequest;
  turn: PolicyTurn;
  target: number;
  generated: number;
  /** Prefix-cache blocks this sequence holds. */
  blocks: BlockKey[];
  /** Tokens it holds outside those blocks (the partial last block and its new tokens). */
  ownTokens: number;
  admitted: boolean;
  /** Prompt tokens found cached at the first admission (reported as `cachedTokens`). */
  cachedTokens: number;
  /** Prompt tokens new to the trajectory not yet prefilled. */
  newTokensLeft: number;
  /**
   * With chunked prefill, while admitted and not yet prefilled: what is left of its prefill, and
   * the keys of its whole context (it holds the leading `blocks.length` of them; the rest of its
   * context is held as own tokens until its last chunk, so no other request finds them cached before).
   */
  prefill: (PendingPrefill & { keys: BlockKey[] }) | null;
  /**
   * The block keys of its context as last computed, and the context's length then: a sequence
   * at the head of the queue that does not fit is looked at again at every iteration boundary,
   * and its context does not change while it waits: a request's prompt is not changed while
   * it is in flight, and keys depend on tokens alone (null: not computed since it last ran).
   */
  contextKeys: { keys: BlockKey[]; tokens: number; generated: number } | null;
  aborted: boolean;
  settle: (result: GenerateResult | Error) => void;
};

type Stretch = {
  startMs: number;
  prefillMs: number;
  batch: number;
  contextTokens: number;
  iterations: number;
  event: ScheduledEvent;
  /** With chunked prefill: tokens this iteration prefills of each sequence at the head of the prefilling queue. */
  chunk: number[] | null;
  /** KV held by sequences being prefilled (not in the decode batch). */
  prefillingTokens: number;
};

export class SimulatedEngine implements Engine {
  readonly name: string;
  readonly #clock: VirtualClock;
  readonly #policy: SimulatedPolicy;
  readonly #cost: CostModel;
  readonly #capacity: number;
  readonly #maxRunning: number;
  readonly #cache: PrefixCache;
  readonly #prefixCaching: boolean;
  readonly #keyCache: BlockKeyCache;
  readonly #residence: Map<string, { replica: string; version: number }>;
  readonly #onStretch: ((stretch: StretchRecord) => void) | undefined;
  readonly #hostLoadPerTokenMs: number;
  readonly #chunkTokens: number;
  readonly #pins: KvPins | null;
  readonly #waiting: Sequence[] = [];
  #running: Sequence[] = [];
  /** With chunked prefill: admitted sequences whose prefill is not done, in arrival order. */
  readonly #prefilling: Sequence[] = [];
  #prefillTokensLeft = 0;
  #ownTokens = 0;
  #stretch: Stretch | null = null;
  readonly #metrics: SimulatedEngineMetrics = emptyEngineMetrics();

  constructor(options: SimulatedEngineOptions) {
    this.name = options.name;
    this.#clock = options.clock;
    this.#policy = options.policy;
    this.#cost = options.costModel;
    this.#capacity = options.kvCapacityTokens;
    this.#maxRunning = options.maxRunningRequests;
    const blockTokens = options.blockTokens ?? 16;
    this.#cache = new PrefixCache({
      blockTokens,
      hostBlocks: Math.floor((options.hostKv?.capacityTokens ?? 0) / blockTokens),
    });
    this.#hostLoadPerTokenMs = options.hostKv?.loadPerTokenMs ?? 0;
    this.#prefixCaching = options.prefixCaching ?? true;
    this.#keyCache = options.keyCache ?? new BlockKeyCache({ blockTokens: this.#cache.blockTokens });
    this.#residence = options.residence ?? new Map();
    this.#onStretch = options.onStretch;
    if (this.#keyCache.blockTokens !== this.#cache.blockTokens)
      throw new Error('keyCache.blockTokens must equal blockTokens');
    const chunkTokens = options.chunkedPrefillTokens ?? 0;
    if (!Number.isInteger(chunkTokens) || chunkTokens < 0)
      throw new Error('chunkedPrefillTokens must be a positive integer');
    this.#chunkTokens = chunkTokens;
    this.#pins =
      options.kvTtlMs === undefined || !this.#prefixCaching
        ? null
        : new KvPins({
            cache: this.#cache,
            clock: this.#clock,
            ttlMs: options.kvTtlMs,
            // Room came free: waiting work may now be admitted.
            onExpire: () => {
              if (this.#waiting.length > 0) this.#kick();
            },
          });
  }

  metrics(): SimulatedEngineMetrics {
    const metrics = { ...this.#metrics };
    if (this.#pins !== null) {
      metrics.kvPinsUsed = this.#pins.used;
      metrics.kvPinsExpired = this.#pins.expired;
    }
    return metrics;
  }

  /**
   * Drops every cached prefix no running request holds, as a real engine does after a weight
   * update (KV computed with the old weights is no longer valid): the next turn of a parked
   * trajectory prefills its whole context again, counted as re-prefill.
   */
  flushCache(): void {
    this.#pins?.releaseAll();
    this.#cache.evict(this.#cache.idleBlocks);
    this.#cache.dropHost();
  }

  /** The stretch of work under way, from its start until now (null when idle). */
  stretchSoFar(): StretchRecord | null {
    const stretch = this.#stretch;
    if (stretch === null) return null;
    return {
      startMs: stretch.startMs,
      ms: this.#clock.now() - stretch.startMs,
      batch: stretch.batch,
      meanContextTokens: stretch.contextTokens + stretch.prefillingTokens,
      kvCapacityTokens: this.#capacity,
    };
  }

  /** Requests waiting plus running (what a least-requests router would count). */
  get load(): number {
    return this.#waiting.length + this.#running.length + this.#prefilling.length;
  }

  generate(request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
    if (signal?.aborted) return Promise.resolve(this.#aborted());
    const turn = this.#policy.turn(request);
    return new Promise<GenerateResult>((resolve, reject) => {
      const sequence: Sequence = {
        request,
        turn,
        target: Math.max(1, turn.tokenIds.length),
        generated: 0,
        blocks: [],
        ownTokens: 0,
        admitted: false,
        newTokensLeft: turn.newPromptTokens,
        prefill: null,
        contextKeys: null,
        cachedTokens: 0,
        aborted: false,
        settle: (result) => {
          signal?.removeEventListener('abort', onAbort);
          if (result instanceof Error) reject(result);
          else resolve(result);
        },
      };
      const onAbort = () => this.#abort(sequence);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#metrics.requests++;
      this.#metrics.promptTokens += request.promptTokenIds.length;
      // A session whose KV is pinned here goes first (Continuum's program-level first-come-
      // first-serve): queued behind newer work, its pin would run out while it waits.
      if (request.sessionId !== undefined && this.#pins?.holds(request.sessionId) === true)
        this.#waiting.unshift(sequence);
      else this.#waiting.push(sequence);
      this.#kick();
    });
  }

  /** Starts work when idle, or ends the current stretch early so the newcomer can join. */
  #kick(): void {
    const stretch = this.#stretch;
    if (stretch === null) {
      this.#boundary();
      return;
    }
    if (this.#running.length + this.#prefilling.length >= this.#maxRunning) return;
    const decodeElapsed = this.#clock.now() - stretch.startMs - stretch.prefillMs;
    const done =
      decodeElapsed <= 0
        ? 0
        : iterationsWithin(this.#cost, stretch.batch, stretch.contextTokens, decodeElapsed);
    const iterations = Math.min(stretch.iterations, done + 1);
    if (iterations >= stretch.iterations) return;
    stretch.event.cancel();
    this.#plan(stretch.startMs, stretch.prefillMs, iterations);
  }

  /** An iteration boundary: account the stretch that ended, finish, admit, plan the next. */
  #boundary(): void {
    const stretch = this.#stretch;
    this.#stretch = null;
    if (stretch !== null) {
      const ms =
        stretch.prefillMs + decodeMs(this.#cost, stretch.batch, stretch.contextTokens, stretch.iterations);
      this.#metrics.busyMs += ms;
      this.#metrics.decodeIterations += stretch.iterations;
      this.#onStretch?.({
        startMs: stretch.startMs,
        ms,
        batch: stretch.batch,
        meanContextTokens:
          stretch.contextTokens + stretch.prefillingTokens + (stretch.batch * stretch.iterations) / 2,
        kvCapacityTokens: this.#capacity,
      });
      this.#metrics.generatedTokens += stretch.batch * stretch.iterations;
      this.#ownTokens += stretch.batch * stretch.iterations;
      const still: Sequence[] = [];
      for (const sequence of this.#running) {
        sequence.generated += stretch.iterations;
        sequence.ownTokens += stretch.iterations;
        if (sequence.aborted) this.#drop(sequence, 0);
        else if (sequence.generated >= sequence.target) this.#complete(sequence);
        else still.push(sequence);
      }
      this.#running = still;
      if (this.#prefilling.length > 0) this.#advancePrefills(stretch.chunk);
      const overflow = this.#usedTokens() - this.#capacity;
      if (overflow > 0) this.#cache.evict(Math.ceil(overflow / this.#cache.blockTokens));
    }
    const prefillMs = this.#admit();
    while (this.#running.length > 0) {
      const room = this.#capacity - this.#usedTokens() + this.#cache.idleBlocks * this.#cache.blockTokens;
      if (room >= this.#running.length) break;
      // Not even one more iteration fits: preempt the newest running sequence (recompute later).
      this.#preempt(this.#running.pop() as Sequence);
    }
    if (this.#prefilling.length > 0) {
      // One iteration: the next chunk beside the decode batch (if any).
      const chunk = nextPrefillChunk(
        this.#prefilling.map((sequence) => sequence.prefill as PendingPrefill),
        this.#chunkTokens,
        this.#cost,
      );
      this.#plan(this.#clock.now(), chunk.ms, this.#running.length > 0 ? 1 : 0, chunk.tokens);
      return;
    }
    if (this.#running.length === 0) {
      // Pinned KV may be what keeps the head out: its time-to-live ends, and admits it.
      if (this.#waiting.length > 0 && (this.#pins?.size ?? 0) === 0) this.#failHead();
      return;
    }
    this.#plan(this.#clock.now(), prefillMs, this.#iterationsToNextEvent());
  }

  #plan(startMs: number, prefillMs: number, iterations: number, chunk: number[] | null = null): void {
    const batch = this.#running.length;
    let contextTokens = 0;
    for (const sequence of this.#running)
      contextTokens += sequence.request.promptTokenIds.length + sequence.generated;
    let prefillingTokens = 0;
    for (const sequence of this.#prefilling) prefillingTokens += sequence.prefill?.to ?? 0;
    const ms = prefillMs + decodeMs(this.#cost, batch, contextTokens, iterations);
    const event = this.#clock.schedule(startMs + ms - this.#clock.now(), () => this.#boundary());
    this.#stretch = { startMs, prefillMs, batch, contextTokens, iterations, event, chunk, prefillingTokens };
  }

  /**
   * Chunked prefill: the iteration that ended prefilled `chunk` tokens of the sequences at the
   * head of the queue; those it finished join the decode batch (newest last), aborted ones leave.
   */
  #advancePrefills(chunk: number[] | null): void {
    const done: Sequence[] = [];
    const still: Sequence[] = [];
    this.#prefilling.forEach((sequence, index) => {
      const prefill = sequence.prefill as PendingPrefill & { keys: BlockKey[] };
      const tokens = chunk?.[index] ?? 0;
      if (tokens > 0) {
        prefill.from += tokens;
        prefill.loadMs = 0;
        this.#prefillTokensLeft -= tokens;
      }
      if (sequence.aborted) {
        this.#prefillTokensLeft -= prefill.to - prefill.from;
        sequence.prefill = null;
        this.#drop(sequence, 0);
      } else if (prefill.from >= prefill.to) done.push(sequence);
      else still.push(sequence);
    });
    this.#prefilling.length = 0;
    this.#prefilling.push(...still);
    const blockTokens = this.#cache.blockTokens;
    for (const sequence of done) {
      const { keys } = sequence.prefill as { keys: BlockKey[] };
      // Its blocks are computed now: cached, where the next request of its trajectory finds them.
      const held = sequence.blocks.length;
      this.#cache.acquire(keys, held);
      sequence.blocks = keys;
      sequence.ownTokens -= (keys.length - held) * blockTokens;
      this.#ownTokens -= (keys.length - held) * blockTokens;
      sequence.prefill = null;
      this.#running.push(sequence);
    }
  }

  /** Iterations until a sequence finishes or the KV cache is full. */
  #iterationsToNextEvent(): number {
    let iterations = Number.MAX_SAFE_INTEGER;
    for (const sequence of this.#running)
      iterations = Math.min(iterations, sequence.target - sequence.generated);
    const room = this.#capacity - this.#usedTokens() + this.#cache.idleBlocks * this.#cache.blockTokens;
    return Math.max(1, Math.min(iterations, Math.floor(room / this.#running.length)));
  }

  #usedTokens(): number {
    return this.#cache.blocks * this.#cache.blockTokens + this.#ownTokens;
  }

  /** Admits waiting sequences in order while they fit; returns the prefill time they cost. */
  #admit(): number {
    let admitMs = 0;
    const blockTokens = this.#cache.blockTokens;
    const chunking = this.#chunkTokens > 0;
    while (
      this.#waiting.length > 0 &&
      this.#running.length + this.#prefilling.length < this.#maxRunning &&
      // With chunked prefill a request is taken only while the next chunk has room (as vLLM and
      // SGLang take new requests into an iteration's token budget).
      (!chunking || this.#prefillTokensLeft < this.#chunkTokens)
    ) {
      const sequence = this.#waiting[0] as Sequence;
      const { keys, tokens: contextTokens } = this.#contextKeysOf(sequence);
      const inGpu = this.#prefixCaching ? this.#cache.matchLength(keys) : 0;
      const inHost = this.#prefixCaching ? this.#cache.matchHost(keys, inGpu) : 0;
      const matched = inGpu + inHost;
      // The last token is always computed: its logits start the decode.
      const cachedTokens = Math.min(matched * blockTokens, contextTokens - 1);
      const loadedTokens = Math.max(0, cachedTokens - inGpu * blockTokens);
      const needed = contextTokens - cachedTokens + this.#running.length + 1;
      const free =
        this.#capacity -
        this.#usedTokens() +
        (this.#cache.idleBlocks - this.#cache.idleAmong(keys, 0, inGpu)) * blockTokens;
      if (needed + loadedTokens > free) break;
      this.#waiting.shift();
      sequence.contextKeys = null;
      this.#cache.acquire(keys, 0, inGpu);
      this.#cache.takeFromHost(keys, inGpu, matched);
      const overflow = this.#usedTokens() + (contextTokens - inGpu * blockTokens) - this.#capacity;
      if (overflow > 0) this.#cache.evict(Math.ceil(overflow / blockTokens));
      // Chunked: the blocks still to compute are held as own tokens until the last chunk.
      const heldBlocks = chunking ? matched : keys.length;
      this.#cache.acquire(keys, inGpu, heldBlocks);
      sequence.blocks = heldBlocks === keys.length ? keys : keys.slice(0, heldBlocks);
      sequence.ownTokens = contextTokens - heldBlocks * blockTokens;
      this.#ownTokens += sequence.ownTokens;
      const session = sequence.request.sessionId;
      if (this.#pins !== null && session !== undefined) this.#pins.resume(session);
      const computed = contextTokens - cachedTokens;
      if (!sequence.admitted) {
        sequence.cachedTokens = Math.min(cachedTokens, sequence.request.promptTokenIds.length);
        this.#metrics.cachedTokens += sequence.cachedTokens;
      }
      this.#metrics.prefillTokens += computed;
      // Only the trajectory's new tokens (first prompt, tool output), once, are not re-prefill.
      // They come last in the context, so the re-prefilled ones are those right after the cache.
      const reprefilled = Math.max(0, computed - sequence.newTokensLeft);
      this.#countReprefill(sequence, reprefilled);
      this.#metrics.reprefillMs += prefillMs(this.#cost, cachedTokens, cachedTokens + reprefilled);
      sequence.admitted = true;
      sequence.newTokensLeft = 0;
      this.#metrics.hostLoadedTokens += loadedTokens;
      const loadMs = loadedTokens * this.#hostLoadPerTokenMs;
      const sequenceMs = loadMs + prefillMs(this.#cost, cachedTokens, contextTokens);
      this.#metrics.prefillMs += sequenceMs;
      if (chunking) {
        sequence.prefill = { from: cachedTokens, to: contextTokens, loadMs, keys };
        this.#prefillTokensLeft += contextTokens - cachedTokens;
        this.#prefilling.push(sequence);
        continue;
      }
      admitMs += sequenceMs;
      this.#running.push(sequence);
    }
    return admitMs;
  }

  /** Counts re-prefilled tokens by cause, and notes where the trajectory's KV now is. */
  #countReprefill(sequence: Sequence, tokens: number): void {
    const session = sequence.request.sessionId;
    const version = this.#policy.version;
    const last = session === undefined ? undefined : this.#residence.get(session);
    if (session !== undefined) this.#residence.set(session, { replica: this.name, version });
    if (tokens === 0) return;
    const metrics = this.#metrics;
    metrics.reprefillTokens += tokens;
    // A weight update drops the KV wherever the trajectory resumes, so it is counted first.
    if (sequence.admitted) metrics.reprefillPreemptedTokens += tokens;
    else if (last !== undefined && last.version !== version) metrics.reprefillWeightUpdateTokens += tokens;
    else if (last === undefined || last.replica !== this.name) metrics.reprefillMovedTokens += tokens;
    else metrics.reprefillEvictedTokens += tokens;
  }

  /** The block keys of a sequence's context and its length in tokens (kept while it waits). */
  #contextKeysOf(sequence: Sequence): { keys: BlockKey[]; tokens: number } {
    const known = sequence.contextKeys;
    if (
      known !== null &&
      known.generated === sequence.generated &&
      known.tokens ===
        sequence.request.promptTokenIds.length + Math.min(sequence.generated, sequence.turn.tokenIds.length)
    )
      return known;
    const tokens = this.#contextOf(sequence);
    const keys = this.#keyCache.keysFor(tokens, sequence.request.sessionId);
    sequence.contextKeys = { keys, tokens: tokens.length, generated: sequence.generated };
    return sequence.contextKeys;
  }

  /** The tokens a sequence holds: its prompt, plus what it generated before a preemption. */
  #contextOf(sequence: Sequence): readonly number[] {
    const prompt = sequence.request.promptTokenIds;
    if (sequence.generated === 0) return prompt;
    return prompt.concat(sequence.turn.tokenIds.slice(0, sequence.generated));
  }

  #complete(sequence: Sequence): void {
    const { turn } = sequence;
    const session = sequence.request.sessionId;
    // A turn that ends at a stop string hands a tool call to the agent: its session comes back.
    const pinFor = this.#pins !== null && turn.matchedStop !== null ? session : undefined;
    this.#drop(sequence, turn.tokenIds.length, pinFor);
    turn.commit();
    sequence.settle({
      tokenIds: turn.tokenIds,
      text: turn.text,
      logprobs: null,
      finishReason: turn.finishReason,
      matchedStop: turn.matchedStop,
      stopIncluded: true,
      policyVersion: this.#policy.version,
      cachedTokens: sequence.cachedTokens,
    });
  }

  /**
   * Releases a sequence's KV; its first `keepTokens` generated tokens stay cached as full blocks.
   * With `pinFor`, the blocks stay referenced for that session until `#pins` lets them go.
   */
  #drop(sequence: Sequence, keepTokens: number, pinFor?: string): void {
    const blockTokens = this.#cache.blockTokens;
    this.#ownTokens -= sequence.ownTokens;
    sequence.ownTokens = 0;
    let more: BlockKey[] = [];
    if (keepTokens > 0) {
      const prompt = sequence.request.promptTokenIds;
      const covered = sequence.blocks.length * blockTokens;
      const { tokenIds } = sequence.turn;
      const end = Math.min(keepTokens, tokenIds.length);
      // The tokens after the held blocks: the prompt's rest and the output kept, as one run.
      more =
        covered <= prompt.length
          ? joinedBlockKeys(prompt, covered, tokenIds, 0, end, blockTokens, sequence.blocks.at(-1))
          : joinedBlockKeys(
              [],
              0,
              tokenIds,
              covered - prompt.length,
              end,
              blockTokens,
              sequence.blocks.at(-1),
            );
      this.#cache.acquire(more);
      const overflow = this.#usedTokens() - this.#capacity;
      if (overflow > 0) this.#cache.evict(Math.ceil(overflow / blockTokens));
    }
    if (pinFor !== undefined && this.#pins !== null) this.#pins.pin(pinFor, [more, sequence.blocks]);
    else {
      // Deepest first, as for the blocks and these joined.
      this.#cache.release(more);
      this.#cache.release(sequence.blocks);
    }
    sequence.blocks = [];
    if (!this.#prefixCaching) this.#cache.evict(this.#cache.idleBlocks);
  }

  #preempt(sequence: Sequence): void {
    this.#metrics.preemptions++;
    this.#drop(sequence, sequence.generated);
    this.#waiting.unshift(sequence);
  }

  /** Nothing runs and the head of the queue cannot fit even in an empty cache. */
  #failHead(): void {
    const sequence = this.#waiting.shift() as Sequence;
    sequence.settle(new KvCapacityExceededError(this.name, this.#contextOf(sequence).length, this.#capacity));
    if (this.#waiting.length > 0) this.#boundary();
  }

  #abort(sequence: Sequence): void {
    if (sequence.aborted) return;
    sequence.aborted = true;
    const waitingAt = this.#waiting.indexOf(sequence);
    if (waitingAt >= 0) this.#waiting.splice(waitingAt, 1);
    // A running sequence leaves the batch at the next iteration boundary.
    sequence.settle(this.#aborted());
  }

  #aborted(): GenerateResult {
    return {
      tokenIds: [],
      text: '',
      logprobs: null,
      finishReason: 'abort',
      matchedStop: null,
      policyVersion: this.#policy.version,
    };
  }
}
