/**
 * Weight sync over a process group (`--weight-sync distributed`), SGLang's way
 * (`/init_weights_update_group`, `/update_weights_from_distributed`; read in SGLang 0.5.x's
 * `http_server.py` and `io_struct.py`), laid out as verl, AReaL and slime do: the trainer's
 * rank 0 is rank 0 of a group whose other members are the engines' ranks: a server with
 * tensor-parallel size tp (its `/get_server_info` `tp_size`; 1 when it does not say, as the
 * embedded worker) takes tp consecutive ranks from its `rank_offset`.
 *
 * Once: the trainer opens the group (a free port on its rank 0, the broadcast plan: Hugging
 * Face names, shapes, the dtype, in buckets), then it and every engine join at the same time.
 * After each step: every engine paused → the trainer broadcasts bucket after bucket while each
 * engine receives the same bucket through one `/update_weights_from_distributed` (the last one
 * carries `weight_version`) → continue. A bucket an engine refuses is still received by it (the
 * group stays in step), the sync finishes, and then fails naming the engine; an engine that
 * cannot be reached fails the sync (a member missing from a broadcast breaks the group; a resume
 * forms a new one). Nothing is written to disk: `OUT/model/` is exported separately.
 */
import { z } from 'zod';
import type { PauseMode } from '../engine/sglang-engine.ts';
import type { DistributedTrainerClient, WeightBucket } from './distributed-trainer-client.ts';
import type { RlWeightSync } from './rl-parts.ts';
import { type PausableEngine, WeightSyncError } from './weight-sync.ts';

export type WeightGroupTrainer = Pick<
  DistributedTrainerClient,
  'openWeightsUpdateGroup' | 'joinWeightsUpdateGroup' | 'broadcastWeights'
>;

/** An engine of the group: its client (pause / continue), where its routes are, its ranks. */
export type GroupEngine = { name: string; url: string; engine: PausableEngine; tensorParallel?: number };

export type WeightUpdateGroup = {
  groupName: string;
  buckets: WeightBucket[];
  engines: readonly GroupEngine[];
  apiKey: string | undefined;
};

const answerSchema = z.object({ success: z.boolean(), message: z.string() });

/** Forms the group: the trainer's rank 0 and every engine (blocks until all have joined). */
export async function openWeightUpdateGroup({
  trainer,
  engines,
  masterAddress,
  backend,
  groupName,
  apiKey,
  bucketBytes,
}: {
  trainer: WeightGroupTrainer;
  engines: readonly GroupEngine[];
  /** The trainer's rank-0 host as the engines reach it. */
  masterAddress: string;
  backend: 'nccl' | 'gloo';
  groupName: string;
  apiKey?: string;
  bucketBytes?: number;
}): Promise<WeightUpdateGroup> {
  const offsets: number[] = [];
  let worldSize = 1;
  for (const member of engines) {
    offsets.push(worldSize);
    worldSize += member.tensorParallel ?? 1;
  }
  const opened = await trainer.openWeightsUpdateGroup({
    groupName,
    worldSize,
    backend,
    ...(bucketBytes === undefined ? {} : { bucketBytes }),
  });
  const joins = engines.map((member, index) =>
    postEngine(member, '/init_weights_update_group', apiKey, {
      master_address: masterAddress,
      master_port: opened.masterPort,
      rank_offset: offsets[index],
      world_size: worldSize,
      group_name: groupName,
      backend,
    }),
  );
  const [trainerJoin, ...answers] = await Promise.allSettled([
    trainer.joinWeightsUpdateGroup(groupName),
    ...joins,
  ]);
  const failures = answers.flatMap((outcome, index) =>
    outcome.status === 'fulfilled' && outcome.value.success
      ? []
      : [
          `${engines[index]!.name} (${outcome.status === 'fulfilled' ? outcome.value.message : describe(outcome.reason)})`,
        ],
  );
  if (trainerJoin?.status === 'rejected') failures.push(`the trainer (${describe(trainerJoin.reason)})`);
  if (failures.length > 0) {
    throw new WeightSyncError(
      `weight update group ${groupName}: could not be formed: ${failures.join(', ')}`,
    );
  }
  return { groupName, buckets: opened.buckets, engines, apiKey };
}

/** Pushes the trainer's current weights to every engine through the group. */
export async function syncWeightsDistributed({
  trainer,
  group,
  policyVersion,
  pauseMode = 'abort',
  now = () => performance.now(),
}: {
  trainer: WeightGroupTrainer;
  group: WeightUpdateGroup;
  /** The trainer's policy version: the engines' `weight_version` after the update. */
  policyVersion: number;
  pauseMode?: PauseMode;
  now?: () => number;
}): Promise<RlWeightSync & { bytes: number }> {
  const started = now();
  const engines = group.engines;
  try {
    const paused = await Promise.allSettled(engines.map(({ engine }) => engine.pauseGeneration(pauseMode)));
    const lost = paused.flatMap((outcome, index) =>
      outcome.status === 'rejected' ? [`${engines[index]!.name} (${describe(outcome.reason)})`] : [],
    );
    if (lost.length > 0) throw new WeightSyncError(`weight sync: ${lost.join(', ')} could not be paused`);
    const sending = trainer.broadcastWeights(group.groupName);
    // A failed broadcast must not leave the receiving calls waiting unobserved.
    sending.catch(() => {});
    const refused = new Map<string, string>();
    for (const [index, bucket] of group.buckets.entries()) {
      const last = index === group.buckets.length - 1;
      const answers = await Promise.allSettled(
        engines.map((member) =>
          postEngine(member, '/update_weights_from_distributed', group.apiKey, {
            ...bucket,
            group_name: group.groupName,
            // SGLang flushes after the update and asserts the flush worked, which fails while
            // requests are held in place; abort and retract leave nothing running.
            flush_cache: pauseMode !== 'in_place',
            ...(last ? { weight_version: String(policyVersion) } : {}),
          }),
        ),
      );
      answers.forEach((outcome, member) => {
        const name = engines[member]!.name;
        if (outcome.status === 'rejected') {
          throw new WeightSyncError(
            `weight sync: ${name} could not be reached during bucket ${index + 1}/${group.buckets.length} (${describe(outcome.reason)}); the group is broken, resume the run to form a new one`,
            { cause: outcome.reason },
          );
        }
        if (!outcome.value.success && !refused.has(name)) refused.set(name, outcome.value.message);
      });
    }
    const sent = await sending;
    if (refused.size > 0) {
      throw new WeightSyncError(
        `weights v${sent.policyVersion} over group ${group.groupName} were refused by ${[...refused].map(([name, message]) => `${name} (${message})`).join(', ')}`,
      );
    }
    if (sent.policyVersion !== policyVersion) {
      throw new WeightSyncError(
        `weight sync: the trainer broadcast policy v${sent.policyVersion}, the run expected v${policyVersion}`,
      );
    }
    const finished = now();
    return {
      policyVersion: sent.policyVersion,
      exportMs: 0,
      pausedMs: finished - started,
      totalMs: finished - started,
      bytes: sent.bytes,
    };
  } finally {
    await Promise.allSettled(engines.map(({ engine }) => engine.continueGeneration()));
  }
}

async function postEngine(
  member: GroupEngine,
  route: string,
  apiKey: string | undefined,
  body: unknown,
): Promise<z.infer<typeof answerSchema>> {
  const response = await fetch(`${member.url.replace(/\/$/, '')}${route}`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      ...(apiKey === undefined ? {} : { Authorization: `Bearer ${apiKey}` }),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(3_600_000),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  const answer = answerSchema.safeParse(parsed);
  // SGLang answers a failed update 400 with { success: false, message }: a refusal, not an outage.
  if (answer.success) return answer.data;
  return { success: false, message: `${route} answered ${response.status}: ${text.slice(0, 300)}` };
}

/** SGLang's `/get_server_info` `tp_size`; 1 for a server without the route (the embedded worker). */
async function tensorParallelSize(member: GroupEngine, apiKey: string | undefined): Promise<number> {
  const response = await fetch(`${member.url.replace(/\/$/, '')}/get_server_info`, {
    headers: apiKey === undefined ? {} : { Authorization: `Bearer ${apiKey}` },
    signal: AbortSignal.timeout(60_000),
  });
  if (response.status === 404) return 1;
  const size = ((await response.json()) as { tp_size?: unknown }).tp_size;
  return typeof size === 'number' && Number.isInteger(size) && size > 0 ? size : 1;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The cluster parts' weight sync over a group: formed once at the start, used after each step. */
export async function startDistributedWeightSync({
  trainer,
  engines,
  trainerUrl,
  device,
  apiKey,
}: {
  trainer: WeightGroupTrainer & Pick<DistributedTrainerClient, 'exportModel'>;
  engines: readonly GroupEngine[];
  /** The trainer's URL when it runs elsewhere (its host is the group's master); null: here. */
  trainerUrl: string | null;
  /** The trainer's device (`cuda:0`, `cpu`): NCCL between GPUs, gloo otherwise. */
  device: string;
  apiKey?: string;
}): Promise<{
  syncWeights(policyVersion: number): Promise<RlWeightSync>;
  publishModel(target: string): Promise<void>;
}> {
  const sized = await Promise.all(
    engines.map(async (member) => ({ ...member, tensorParallel: await tensorParallelSize(member, apiKey) })),
  );
  const group = await openWeightUpdateGroup({
    trainer,
    engines: sized,
    masterAddress: trainerUrl === null ? '127.0.0.1' : new URL(trainerUrl).hostname,
    backend: device.startsWith('cuda') ? 'nccl' : 'gloo',
    groupName: `agentmath-weights-${process.pid}-${Date.now()}`,
    ...(apiKey === undefined ? {} : { apiKey }),
  });
  return {
    syncWeights: (policyVersion) => syncWeightsDistributed({ trainer, group, policyVersion }),
    // The weights never touch the disk during the run: `model/` is one export, written atomically.
    publishModel: async (target) => {
      await trainer.exportModel(target);
    },
  };
}
