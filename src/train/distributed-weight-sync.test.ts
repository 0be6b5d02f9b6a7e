import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { WeightBucket } from './distributed-trainer-client.ts';
import {
  destroyWeightUpdateGroup,
  type GroupEngine,
  openWeightUpdateGroup,
  syncWeightsDistributed,
  type WeightGroupTrainer,
} from './distributed-weight-sync.ts';
import type { PausableEngine } from './weight-sync.ts';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise((resolve) => {
          server.closeAllConnections();
          server.close(resolve);
        }),
    ),
  );
});

const BUCKETS: WeightBucket[] = [
  { names: ['model.embed_tokens.weight'], dtypes: ['bfloat16'], shapes: [[8, 4]] },
  { names: ['model.norm.weight', 'lm_head.weight'], dtypes: ['bfloat16', 'bfloat16'], shapes: [[4], [8, 4]] },
];

type Behaviour = {
  /** `/begin_weight_update` answers SGLang's 400 (a session already open). */
  refuseBegin?: boolean;
  /** `/update_weights_from_distributed` answers SGLang's 400 after receiving (a failed load). */
  refuseLoad?: boolean;
  /** `/update_weights_from_distributed` never answers (an engine still loading). */
  hangOnLoad?: boolean;
};

/**
 * An engine that answers SGLang 0.5.23's routes with its bodies and statuses (200 `{success: true,
 * message}`, 400 `{success: false, message}`), keeps its weight-update session as SGLang does
 * (an update outside one is refused) and reports the version of its last update. Every call is
 * logged in order.
 */
async function scriptedEngine(name: string, log: string[], behaviour: Behaviour = {}): Promise<GroupEngine> {
  let session = false;
  let version: string | null = 'default';
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => {
      text += chunk;
    });
    request.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      const route = request.url ?? '';
      const answer = (ok: boolean, message: string) => {
        response.writeHead(ok ? 200 : 400, { 'Content-Type': 'application/json' });
        response.end(JSON.stringify({ success: ok, message }));
      };
      if (route === '/init_weights_update_group') {
        log.push(
          `${name} join rank ${body.rank_offset}/${body.world_size} ${body.backend} :${body.master_port}`,
        );
        return answer(true, 'Succeeded to initialize custom process group.');
      }
      if (route === '/begin_weight_update') {
        log.push(`${name} begin`);
        if (behaviour.refuseBegin || session)
          return answer(false, 'a weight-update session is already open; call end_weight_update() first');
        session = true;
        return answer(true, 'Success');
      }
      if (route === '/end_weight_update') {
        log.push(`${name} end`);
        if (!session)
          return answer(false, 'no weight-update session is open; call begin_weight_update() first');
        session = false;
        return answer(true, 'Success');
      }
      if (route === '/destroy_weights_update_group') {
        log.push(`${name} destroy ${body.group_name}`);
        return answer(true, 'Succeeded to destroy custom process group.');
      }
      // /update_weights_from_distributed
      if (!session) {
        log.push(`${name} refused: no session`);
        return answer(
          false,
          'update_weights_from_distributed must run between begin_weight_update() and end_weight_update()',
        );
      }
      log.push(
        `${name} receive ${(body.names as string[]).join(',')} flush=${body.flush_cache} v=${body.weight_version ?? '-'}`,
      );
      if (behaviour.hangOnLoad) return;
      if (behaviour.refuseLoad) return answer(false, 'Failed to update parameter online: shape mismatch');
      if (body.weight_version !== undefined) version = String(body.weight_version);
      return answer(true, 'Succeeded to update parameter online.');
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const engine = {
    name,
    pauseGeneration: async (mode: string) => {
      log.push(`${name} pause ${mode}`);
    },
    flushCache: async () => {
      log.push(`${name} flush`);
      return { success: true, message: 'Cache flushed.' };
    },
    weightVersion: async () => version,
    continueGeneration: async () => {
      log.push(`${name} continue`);
    },
  } as unknown as PausableEngine;
  return { name, url, engine };
}

const formGroup = (trainer: WeightGroupTrainer, engines: GroupEngine[]) =>
  openWeightUpdateGroup({ trainer, engines, masterAddress: '127.0.0.1', backend: 'gloo', groupName: 'g' });

function scriptedTrainer(log: string[], policyVersion = 3): WeightGroupTrainer {
  return {
    openWeightsUpdateGroup: async (request) => {
      log.push(`trainer open ${request.groupName} world ${request.worldSize}`);
      return { masterPort: 41000, buckets: BUCKETS };
    },
    joinWeightsUpdateGroup: async () => {
      log.push('trainer join');
    },
    broadcastWeights: async () => {
      log.push('trainer broadcast');
      return { tensors: 3, bytes: 136, broadcastMs: 1, policyVersion };
    },
    destroyWeightsUpdateGroup: async (name) => {
      log.push(`trainer destroy ${name}`);
    },
  };
}

describe('weight sync over a process group (SGLang 0.5.23 routes)', () => {
  it('forms the group with the trainer at rank 0, then sends every bucket inside a session on every engine, between pause and continue', async () => {
    const log: string[] = [];
    const engines = [await scriptedEngine('a', log), await scriptedEngine('b', log)];
    const trainer = scriptedTrainer(log);
    const group = await formGroup(trainer, engines);
    expect(log.slice(0, 1)).toEqual(['trainer open g world 3']);
    expect(log).toContain('a join rank 1/3 gloo :41000');
    expect(log).toContain('b join rank 2/3 gloo :41000');
    expect(log).toContain('trainer join');
    log.length = 0;
    const result = await syncWeightsDistributed({ trainer, group, policyVersion: 3 });
    expect(result).toMatchObject({ policyVersion: 3, exportMs: 0, bytes: 136 });
    expect(result.engines).toEqual([
      { name: 'a', weightVersion: '3' },
      { name: 'b', weightVersion: '3' },
    ]);
    for (const name of ['a', 'b']) {
      expect(log.filter((line) => line.startsWith(`${name} `))).toEqual([
        `${name} pause abort`,
        `${name} flush`,
        `${name} begin`,
        `${name} receive model.embed_tokens.weight flush=true v=-`,
        `${name} receive model.norm.weight,lm_head.weight flush=true v=3`,
        `${name} end`,
        `${name} continue`,
      ]);
    }
    // Every session is open before the trainer sends anything.
    expect(log.indexOf('trainer broadcast')).toBeGreaterThan(
      Math.max(log.indexOf('a begin'), log.indexOf('b begin')),
    );
    // Bucket 2 only after every engine received bucket 1.
    expect(log.indexOf('a receive model.norm.weight,lm_head.weight flush=true v=3')).toBeGreaterThan(
      log.indexOf('b receive model.embed_tokens.weight flush=true v=-'),
    );
  });

  it('a tensor-parallel engine takes tp consecutive ranks', async () => {
    const log: string[] = [];
    const engines = [
      { ...(await scriptedEngine('tp2', log)), tensorParallel: 2 },
      await scriptedEngine('tp1', log),
    ];
    await openWeightUpdateGroup({
      trainer: scriptedTrainer(log),
      engines,
      masterAddress: '127.0.0.1',
      backend: 'nccl',
      groupName: 'g',
    });
    expect(log).toContain('trainer open g world 4');
    expect(log).toContain('tp2 join rank 1/4 nccl :41000');
    expect(log).toContain('tp1 join rank 3/4 nccl :41000');
  });

  it('an engine that refuses to begin: the others end their sessions, nothing is sent, every engine continues, the sync fails naming it', async () => {
    const log: string[] = [];
    const engines = [
      await scriptedEngine('a', log),
      await scriptedEngine('busy', log, { refuseBegin: true }),
    ];
    const trainer = scriptedTrainer(log);
    const group = await formGroup(trainer, engines);
    log.length = 0;
    await expect(syncWeightsDistributed({ trainer, group, policyVersion: 3 })).rejects.toMatchObject({
      code: 'WEIGHT_SYNC_FAILED',
      message: expect.stringMatching(
        /no weight-update session on busy \(a weight-update session is already open.*nothing was sent/,
      ),
    });
    expect(log).not.toContain('trainer broadcast');
    expect(log.some((line) => line.includes('receive'))).toBe(false);
    expect(log.filter((line) => line.startsWith('a '))).toEqual([
      'a pause abort',
      'a flush',
      'a begin',
      'a end',
      'a continue',
    ]);
    expect(log).toContain('busy continue');
  });

  it('an engine that refuses a bucket after receiving it still receives every bucket; the sessions end, then the sync fails naming it', async () => {
    const log: string[] = [];
    const engines = [await scriptedEngine('a', log), await scriptedEngine('bad', log, { refuseLoad: true })];
    const trainer = scriptedTrainer(log);
    const group = await formGroup(trainer, engines);
    log.length = 0;
    await expect(syncWeightsDistributed({ trainer, group, policyVersion: 3 })).rejects.toMatchObject({
      code: 'WEIGHT_SYNC_FAILED',
      message: expect.stringMatching(/refused by bad \(.*shape mismatch/),
    });
    expect(log.filter((line) => line.startsWith('bad receive'))).toHaveLength(2);
    for (const name of ['a', 'bad'])
      expect(log.filter((line) => line.startsWith(name)).slice(-2)).toEqual([
        `${name} end`,
        `${name} continue`,
      ]);
  });

  it('an engine that does not answer in time is an outage that says so, not a refusal; one that cannot be reached fails the group', async () => {
    const log: string[] = [];
    const live = await scriptedEngine('a', log);
    const slow = await scriptedEngine('slow', log, { hangOnLoad: true });
    const trainer = scriptedTrainer(log);
    const group = await formGroup(trainer, [live, slow]);
    await expect(
      syncWeightsDistributed({
        trainer,
        group,
        policyVersion: 3,
        timeouts: { controlMs: 5_000, loadBaseMs: 300 },
      }),
    ).rejects.toThrow(
      /slow failed during bucket 1\/2: \/update_weights_from_distributed did not answer within 0\.3 s; the group is broken/,
    );
    expect(log.slice(-2).sort()).toEqual(['a continue', 'slow continue']);
    const dead: GroupEngine = { ...(await scriptedEngine('dead', log)), url: 'http://127.0.0.1:9' };
    await expect(
      openWeightUpdateGroup({
        trainer,
        engines: [live, dead],
        masterAddress: '10.0.0.5',
        backend: 'gloo',
        groupName: 'h',
      }),
    ).rejects.toThrow(
      /group h: could not be formed with 10\.0\.0\.5:41000 as its master: dead \(\/init_weights_update_group: .*ECONNREFUSED/,
    );
  });

  it("a failed trainer broadcast stops the sync at once, not when the engines' receives time out", async () => {
    const log: string[] = [];
    const waiting = await scriptedEngine('waiting', log, { hangOnLoad: true });
    const trainer = {
      ...scriptedTrainer(log),
      broadcastWeights: async () => {
        throw new Error('trainer /broadcast_weights: answered 500: RuntimeError: Connection closed by peer');
      },
    };
    const group = await formGroup(trainer, [waiting]);
    await expect(syncWeightsDistributed({ trainer, group, policyVersion: 3 })).rejects.toThrow(
      /the trainer's broadcast failed \(.*Connection closed by peer\); the group is broken/,
    );
    expect(log.slice(-2)).toEqual(['waiting end', 'waiting continue']);
  });

  it('destroys the group on every engine and the trainer', async () => {
    const log: string[] = [];
    const engines = [await scriptedEngine('a', log), await scriptedEngine('b', log)];
    const left = await destroyWeightUpdateGroup({ trainer: scriptedTrainer(log), groupName: 'g', engines });
    expect(left).toEqual([]);
    expect(log.sort()).toEqual(['a destroy g', 'b destroy g', 'trainer destroy g']);
  });
});
