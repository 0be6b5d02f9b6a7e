/** The router contract suite, run against every policy. */
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../shared/clock.ts';
import { EngineHttpError, EngineUnavailableError } from '../engine-errors.ts';
import type { Engine, GenerateRequest, GenerateResult } from '../types.ts';
import { createRouterPolicy, ROUTER_POLICY_NAMES } from './create-router-policy.ts';
import { Router } from './router.ts';

/** A replica double: answers when released, or fails with the error it is told to throw. */
class GatedEngine implements Engine {
  readonly name: string;
  inFlight = 0;
  maxInFlight = 0;
  served = 0;
  failWith: Error | null = null;
  readonly #pending: Array<() => void> = [];
  gated = false;

  constructor(name: string) {
    this.name = name;
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    if (this.failWith !== null) throw this.failWith;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    if (this.gated) await new Promise<void>((resolve) => this.#pending.push(resolve));
    this.inFlight--;
    this.served++;
    return {
      tokenIds: [request.promptTokenIds.length],
      text: 'x',
      logprobs: [0],
      finishReason: 'stop',
      matchedStop: null,
      policyVersion: 3,
      cachedTokens: 1,
    };
  }

  releaseAll(): void {
    for (const resolve of this.#pending.splice(0)) resolve();
  }

  get pending(): number {
    return this.#pending.length;
  }
}

const manualClock = (): Clock & { advance(ms: number): void } => {
  let now = 0;
  return { now: () => now, sleep: async () => {}, advance: (ms) => (now += ms) };
};

const request = (length: number, sessionId?: string): GenerateRequest => ({
  promptTokenIds: Array.from({ length }, (_, index) => index % 50),
  maxNewTokens: 4,
  temperature: 1,
  topP: 1,
  stop: [],
  ...(sessionId === undefined ? {} : { sessionId }),
});

const settle = () => new Promise((resolve) => setImmediate(resolve));

function setup(name: (typeof ROUTER_POLICY_NAMES)[number], count = 3, maxInFlightPerReplica = 2) {
  const engines = Array.from({ length: count }, (_, index) => new GatedEngine(`replica-${index}`));
  const clock = manualClock();
  const router = new Router({
    replicas: engines.map((engine) => ({ name: engine.name, engine })),
    policy: createRouterPolicy(name),
    clock,
    maxInFlightPerReplica,
    downtimeMs: 1000,
  });
  return { engines, clock, router };
}

describe.each(ROUTER_POLICY_NAMES)('router contract: %s', (policyName) => {
  it('serves every request and names the replica that served it', async () => {
    const { router, engines } = setup(policyName);
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, index) => router.generate(request(10 + index, `s${index}`))),
    );
    const names = new Set(engines.map((engine) => engine.name));
    for (const result of results) expect(names.has(result.replica ?? '')).toBe(true);
    expect(engines.reduce((sum, engine) => sum + engine.served, 0)).toBe(12);
    const stats = router.replicaStats();
    expect(Object.values(stats).reduce((sum, replica) => sum + replica.requests, 0)).toBe(12);
    expect(Object.values(stats).reduce((sum, replica) => sum + replica.promptTokens, 0)).toBe(12 * 10 + 66);
  });

  it('never has more than the bound in flight on a replica, and makes the rest wait', async () => {
    const { router, engines } = setup(policyName, 2, 2);
    for (const engine of engines) engine.gated = true;
    const calls = Array.from({ length: 7 }, (_, index) => router.generate(request(5, `s${index}`)));
    await settle();
    expect(engines.map((engine) => engine.pending)).toEqual([2, 2]);
    while (engines.some((engine) => engine.pending > 0)) {
      for (const engine of engines) engine.releaseAll();
      await settle();
    }
    await Promise.all(calls);
    for (const engine of engines) expect(engine.maxInFlight).toBeLessThanOrEqual(2);
    expect(engines[0]!.served + engines[1]!.served).toBe(7);
  });

  it('takes a failed replica out, continues the request elsewhere, and probes it after the downtime', async () => {
    const { router, engines, clock } = setup(policyName, 2, 4);
    engines[0]!.failWith = new EngineUnavailableError('http://replica-0', true);
    engines[1]!.failWith = null;
    for (let index = 0; index < 4; index++) {
      const result = await router.generate(request(8, 'same-session'));
      expect(result.replica).toBe('replica-1');
    }
    expect(router.replicaStats()['replica-0']).toMatchObject({ failures: 1, healthy: false, requests: 0 });
    engines[0]!.failWith = null;
    clock.advance(1000);
    expect(router.replicaStats()['replica-0']!.healthy).toBe(true);
    const later = await Promise.all(
      Array.from({ length: 6 }, (_, index) => router.generate(request(8 + index, `n${index}`))),
    );
    expect(later.some((result) => result.replica === 'replica-0')).toBe(true);
  });

  it('fails, not hangs, when every replica is down', async () => {
    const { router, engines } = setup(policyName, 2);
    for (const engine of engines) engine.failWith = new EngineHttpError('http://x', 503, 'busy');
    await expect(router.generate(request(3))).rejects.toMatchObject({ code: 'ENGINE_UNAVAILABLE' });
    await expect(router.generate(request(3))).rejects.toBeInstanceOf(EngineUnavailableError);
  });

  it('does not fail over a request the server refuses (4xx)', async () => {
    const { router, engines } = setup(policyName, 2);
    for (const engine of engines) engine.failWith = new EngineHttpError('http://x', 400, 'too long');
    await expect(router.generate(request(3))).rejects.toMatchObject({ code: 'ENGINE_HTTP_4XX' });
    expect(Object.values(router.replicaStats()).every((replica) => replica.healthy)).toBe(true);
  });
});
