import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { WeightBucket } from './distributed-trainer-client.ts';
import {
  type GroupEngine,
  openWeightUpdateGroup,
  syncWeightsDistributed,
  type WeightGroupTrainer,
} from './distributed-weight-sync.ts';
import type { PausableEngine } from './weight-sync.ts';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

const BUCKETS: WeightBucket[] = [
  { names: ['model.embed_tokens.weight'], dtypes: ['bfloat16'], shapes: [[8, 4]] },
  { names: ['model.norm.weight', 'lm_head.weight'], dtypes: ['bfloat16', 'bfloat16'], shapes: [[4], [8, 4]] },
];

/**
 * An engine that answers SGLang's two routes as SGLang does: 200 `{success: true, message}`, or
 * 400 `{success: false, message}` for a refused update (`refuse`). Pause and continue are logged.
 */
async function scriptedEngine(
  name: string,
  log: string[],
  { refuse = false }: { refuse?: boolean } = {},
): Promise<GroupEngine> {
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => {
      text += chunk;
    });
    request.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      const route = request.url ?? '';
      log.push(
        route === '/init_weights_update_group'
          ? `${name} join rank ${body.rank_offset}/${body.world_size} ${body.backend} :${body.master_port}`
          : `${name} receive ${(body.names as string[]).join(',')} flush=${body.flush_cache} v=${body.weight_version ?? '-'}`,
      );
      const refused = refuse && route === '/update_weights_from_distributed';
      response.writeHead(refused ? 400 : 200, { 'Content-Type': 'application/json' });
      response.end(
        JSON.stringify(
          refused
            ? { success: false, message: 'Failed to update parameter online: shape mismatch' }
            : { success: true, message: 'ok' },
        ),
      );
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

describe('weight sync over a process group (SGLang routes)', () => {
  it('forms the group with the trainer at rank 0, then sends each bucket to every engine between pause and continue', async () => {
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
    const order = (line: string) => log.indexOf(line);
    expect(order('a pause abort')).toBeLessThan(order('a receive model.embed_tokens.weight flush=true v=-'));
    // Bucket 2 only after every engine received bucket 1; the version with the last bucket.
    for (const name of ['a', 'b']) {
      expect(order(`${name} receive model.norm.weight,lm_head.weight flush=true v=3`)).toBeGreaterThan(
        Math.max(
          order('a receive model.embed_tokens.weight flush=true v=-'),
          order('b receive model.embed_tokens.weight flush=true v=-'),
        ),
      );
      expect(order(`${name} continue`)).toBeGreaterThan(
        order(`${name} receive model.norm.weight,lm_head.weight flush=true v=3`),
      );
    }
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

  it('an engine that refuses (HTTP 400) still receives every bucket, then the sync fails naming it; all engines continue', async () => {
    const log: string[] = [];
    const engines = [await scriptedEngine('a', log), await scriptedEngine('bad', log, { refuse: true })];
    const trainer = scriptedTrainer(log);
    const group = await formGroup(trainer, engines);
    log.length = 0;
    await expect(syncWeightsDistributed({ trainer, group, policyVersion: 3 })).rejects.toMatchObject({
      code: 'WEIGHT_SYNC_FAILED',
      message: expect.stringMatching(/refused by bad \(.*shape mismatch/),
    });
    expect(log.filter((line) => line.startsWith('bad receive'))).toHaveLength(2);
    expect(log).toContain('a continue');
    expect(log).toContain('bad continue');
  });

  it('an engine that cannot be reached fails the sync; one that cannot join fails the group', async () => {
    const log: string[] = [];
    const live = await scriptedEngine('a', log);
    const dead: GroupEngine = { ...(await scriptedEngine('dead', log)), url: 'http://127.0.0.1:9' };
    const trainer = scriptedTrainer(log);
    await expect(
      openWeightUpdateGroup({
        trainer,
        engines: [live, dead],
        masterAddress: '127.0.0.1',
        backend: 'gloo',
        groupName: 'g',
      }),
    ).rejects.toThrow(/could not be formed: dead/);
    const group = { groupName: 'g', buckets: BUCKETS, engines: [live, dead], apiKey: undefined };
    await expect(syncWeightsDistributed({ trainer, group, policyVersion: 3 })).rejects.toThrow(
      /dead could not be reached during bucket 1\/2/,
    );
    expect(log).toContain('a continue');
  });
});
