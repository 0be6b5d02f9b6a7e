/**
 * Calls that answer only when done (a trainer step, an export, a broadcast, an engine's load)
 * are not cut by undici's headers timeout: Node's fetch gives up on any request whose headers
 * take longer than its global dispatcher's `headersTimeout` (300 s by default). The test makes
 * that default 1 s through the same setting (the global dispatcher, an undici Agent; its timers
 * tick every 0.5 s), checks that a plain fetch now fails with UND_ERR_HEADERS_TIMEOUT, and that
 * the trainer client and the group's engine calls still get answers that take 2.5 s. Also the
 * rule of the timeouts that grow with the model.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DistributedTrainerClient } from './distributed-trainer-client.ts';
import { openWeightUpdateGroup } from './distributed-weight-sync.ts';
import { LOAD_BASE_MS, modelBytes, modelCallTimeoutMs, TRAINER_BASE_MS } from './model-call-timeout.ts';
import type { PausableEngine } from './weight-sync.ts';

const GLOBAL_DISPATCHER = Symbol.for('undici.globalDispatcher.1');
const DELAY_MS = 2_500;
type Dispatcher = { constructor: new (options: Record<string, unknown>) => Dispatcher };
const slot = globalThis as unknown as Record<symbol, Dispatcher | undefined>;

let server: Server;
let url: string;
let original: Dispatcher | undefined;

beforeAll(async () => {
  server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const body =
        request.url === '/state'
          ? {
              policy_version: 0,
              optimizer_steps: 0,
              world_size: 1,
              model: 'm',
              reference: 'm',
              device: 'cpu',
              compute_dtype: 'bfloat16',
              threads: 1,
              omp_wait_policy: 'PASSIVE',
              parameters: 30_000_000_000,
              peak_memory_bytes: 0,
              baseline_memory_bytes: 0,
            }
          : request.url === '/init_weights_update_group'
            ? { success: true, message: 'Succeeded to initialize custom process group.' }
            : request.url === '/open_weights_update_group'
              ? { group_name: 'g', master_port: 41000, buckets: [] }
              : { path: '/tmp/x', policy_version: 4 };
      setTimeout(
        () => {
          response.writeHead(200, { 'Content-Type': 'application/json' });
          response.end(JSON.stringify(body));
        },
        request.url === '/state' ? 0 : DELAY_MS,
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The global dispatcher exists once fetch was used; replace it by one with a 1-s default.
  await fetch('http://127.0.0.1:9').catch(() => {});
  original = slot[GLOBAL_DISPATCHER];
  if (original === undefined) throw new Error('no global undici dispatcher after a fetch');
  slot[GLOBAL_DISPATCHER] = new original.constructor({ headersTimeout: 1_000 });
});

afterAll(async () => {
  slot[GLOBAL_DISPATCHER] = original;
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('calls longer than undici headersTimeout', () => {
  it('the shortened default is in effect: a plain fetch of the slow answer fails', async () => {
    const failure = await fetch(`${url}/export`, { method: 'POST', body: '{}' }).then(
      () => null,
      (error: Error) => error,
    );
    expect((failure?.cause as { code?: string } | undefined)?.code).toBe('UND_ERR_HEADERS_TIMEOUT');
  });

  it('the trainer client waits for its answer', async () => {
    const client = new DistributedTrainerClient({ baseUrl: url });
    await expect(client.exportModel('/tmp/x')).resolves.toEqual({ path: '/tmp/x', policyVersion: 4 });
  });

  it("the group's engine calls wait for theirs", async () => {
    const trainer = {
      openWeightsUpdateGroup: async () => ({ masterPort: 41000, buckets: [] }),
      joinWeightsUpdateGroup: async () => {},
      broadcastWeights: async () => ({ tensors: 0, bytes: 0, broadcastMs: 0, policyVersion: 0 }),
      destroyWeightsUpdateGroup: async () => {},
    };
    const group = await openWeightUpdateGroup({
      trainer,
      engines: [{ name: 'slow', url, engine: {} as PausableEngine }],
      masterAddress: '127.0.0.1',
      backend: 'gloo',
      groupName: 'g',
    });
    expect(group.groupName).toBe('g');
  });
});

describe('timeouts that grow with the model', () => {
  it('base + bytes at 20 MiB/s: a bf16 30B model gets 58 minutes for a load, 1 h 48 min for a trainer call', () => {
    const bytes = modelBytes(30_000_000_000, 'bfloat16');
    expect(bytes).toBe(60_000_000_000);
    expect(Math.round(modelCallTimeoutMs(bytes, LOAD_BASE_MS) / 60_000)).toBe(58);
    expect(Math.round(modelCallTimeoutMs(bytes, TRAINER_BASE_MS) / 60_000)).toBe(108);
    expect(modelCallTimeoutMs(0, LOAD_BASE_MS)).toBe(600_000);
  });

  it('the trainer client raises its timeout once it knows the model', async () => {
    const client = new DistributedTrainerClient({ baseUrl: url });
    expect(client.timeoutMs).toBe(TRAINER_BASE_MS);
    await client.state();
    expect(client.timeoutMs).toBe(modelCallTimeoutMs(60_000_000_000, TRAINER_BASE_MS));
  });
});
