/**
 * Weight sync over a process group (`--weight-sync distributed`), as SGLang 0.5.23 takes it (the
 * PyPI wheel: routes in `srt/entrypoints/http_server.py`, bodies in `srt/managers/io_struct.py`,
 * the session in `srt/managers/scheduler_components/weight_updater.py`), laid out as verl, AReaL
 * and slime do: the trainer's rank 0 is rank 0 of a group whose other members are the engines'
 * ranks; a server with tensor-parallel size tp (its `/get_server_info` `tp_size`; 1 when it does
 * not say, as the embedded worker) takes tp consecutive ranks from its `rank_offset`.
 *
 * Once: the trainer opens the group (a port held on its rank 0, the broadcast plan: checkpoint
 * names, shapes, the dtype, in buckets), then it and every engine join at the same time
 * (`/init_weights_update_group`), each forming its side as SGLang's `init_custom_process_group`
 * does. After each step:
 *   pause every engine (abort) → flush until done → `/begin_weight_update` on every engine →
 *   the trainer broadcasts bucket after bucket while each engine receives the same bucket through
 *   one `/update_weights_from_distributed` (the last one carries `weight_version`) →
 *   `/end_weight_update` on every engine → read each engine's version → continue.
 * SGLang refuses an update outside a session before receiving anything, which would leave the
 * trainer sending into a group with a member missing: so every session is open before the first
 * bucket, and when one engine refuses to begin, the sessions already open are ended, nothing is
 * sent, every engine continues, and the sync fails naming it. A bucket an engine refuses after
 * receiving it (a failed load) keeps the group in step: the sync finishes, then fails naming the
 * engine. An engine that cannot be reached, or does not answer within the timeout
 * (`model-call-timeout.ts`), is an outage: the sync stops there (a member missing from a broadcast
 * breaks the group; a resume forms a new one). The group is destroyed when the run stops, and a
 * resumed run destroys the one its folder records (`weight-group.json`) before forming its own.
 * Nothing is written to disk but that record: `OUT/model/` is exported separately.
 */
import { existsSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { PauseMode } from '../engine/sglang-engine.ts';
import { longRequest } from '../shared/long-request.ts';
import type { DistributedTrainerClient, WeightBucket } from './distributed-trainer-client.ts';
import { LOAD_BASE_MS, modelBytes, modelCallTimeoutMs } from './model-call-timeout.ts';
import type { RlWeightSync } from './rl-parts.ts';
import { flushUntilDone, type PausableEngine, WeightSyncError } from './weight-sync.ts';

export type WeightGroupTrainer = Pick<
  DistributedTrainerClient,
  'openWeightsUpdateGroup' | 'joinWeightsUpdateGroup' | 'broadcastWeights' | 'destroyWeightsUpdateGroup'
>;

/** An engine of the group: its client (pause / flush / version / continue), its routes, its ranks. */
export type GroupEngine = { name: string; url: string; engine: PausableEngine; tensorParallel?: number };

export type WeightUpdateGroup = {
  groupName: string;
  buckets: WeightBucket[];
  engines: readonly GroupEngine[];
  apiKey: string | undefined;
};

/** How long the group's calls wait (tests shorten them). */
export type GroupTimeouts = { controlMs: number; loadBaseMs: number };
const DEFAULT_TIMEOUTS: GroupTimeouts = { controlMs: LOAD_BASE_MS, loadBaseMs: LOAD_BASE_MS };
/** Destroying at the end of a run: an engine that does not answer in this time is left as it is. */
const DESTROY_TIMEOUT_MS = 60_000;

const answerSchema = z.object({ success: z.boolean(), message: z.string() });
/** An engine's answer: SGLang's `{success, message}` (a refusal is `success: false`), or an outage. */
type EngineAnswer =
  | { kind: 'answer'; success: boolean; message: string }
  | { kind: 'outage'; reason: string };

/** Forms the group: the trainer's rank 0 and every engine (blocks until all have joined). */
export async function openWeightUpdateGroup({
  trainer,
  engines,
  masterAddress,
  backend,
  groupName,
  apiKey,
  bucketBytes,
  timeouts = DEFAULT_TIMEOUTS,
}: {
  trainer: WeightGroupTrainer;
  engines: readonly GroupEngine[];
  /** The trainer's rank-0 host as the engines reach it. */
  masterAddress: string;
  backend: 'nccl' | 'gloo';
  groupName: string;
  apiKey?: string;
  bucketBytes?: number;
  timeouts?: GroupTimeouts;
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
    postEngine(member, '/init_weights_update_group', apiKey, timeouts.controlMs, {
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
  const failures = answers.flatMap((outcome, index) => {
    const answer = settledAnswer(outcome);
    return answer.kind === 'answer' && answer.success
      ? []
      : [`${engines[index]!.name} (${reasonOf(answer)})`];
  });
  if (trainerJoin?.status === 'rejected') failures.push(`the trainer (${describe(trainerJoin.reason)})`);
  if (failures.length > 0) {
    throw new WeightSyncError(
      `weight update group ${groupName}: could not be formed with ${masterAddress}:${opened.masterPort} as its master: ${failures.join(', ')}`,
    );
  }
  return { groupName, buckets: opened.buckets, engines, apiKey };
}

/** Pushes the trainer's current weights to every engine through the group, inside a session. */
export async function syncWeightsDistributed({
  trainer,
  group,
  policyVersion,
  pauseMode = 'abort',
  timeouts = DEFAULT_TIMEOUTS,
  now = () => performance.now(),
}: {
  trainer: WeightGroupTrainer;
  group: WeightUpdateGroup;
  /** The trainer's policy version: the engines' `weight_version` after the update. */
  policyVersion: number;
  pauseMode?: PauseMode;
  timeouts?: GroupTimeouts;
  now?: () => number;
}): Promise<RlWeightSync & { bytes: number }> {
  const started = now();
  const engines = group.engines;
  const inSession = new Set<GroupEngine>();
  const post = (member: GroupEngine, route: string, body: unknown, timeoutMs = timeouts.controlMs) =>
    postEngine(member, route, group.apiKey, timeoutMs, body);
  let failure: unknown = null;
  try {
    const paused = await Promise.allSettled(engines.map(({ engine }) => engine.pauseGeneration(pauseMode)));
    const lost = paused.flatMap((outcome, index) =>
      outcome.status === 'rejected' ? [`${engines[index]!.name} (${describe(outcome.reason)})`] : [],
    );
    if (lost.length > 0) throw new WeightSyncError(`weight sync: ${lost.join(', ')} could not be paused`);
    if (pauseMode !== 'in_place') {
      const flushed = await Promise.all(
        engines.map(async (member) => {
          const reason = await flushUntilDone(member.engine);
          return reason === null ? [] : [`${member.name} (${reason})`];
        }),
      );
      if (flushed.flat().length > 0) throw new WeightSyncError(`weight sync: ${flushed.flat().join(', ')}`);
    }
    // Every session open before anything is sent: an engine outside one refuses before receiving.
    const begun = await Promise.all(engines.map((member) => post(member, '/begin_weight_update', {})));
    begun.forEach((answer, index) => {
      if (answer.kind === 'answer' && answer.success) inSession.add(engines[index]!);
    });
    const notBegun = begun.flatMap((answer, index) =>
      answer.kind === 'answer' && answer.success ? [] : [`${engines[index]!.name} (${reasonOf(answer)})`],
    );
    if (notBegun.length > 0) {
      throw new WeightSyncError(
        `weight sync v${policyVersion}: no weight-update session on ${notBegun.join(', ')}; nothing was sent`,
      );
    }
    const sending = trainer.broadcastWeights(group.groupName);
    // A broadcast that fails ends the wait for the engines' answers at once (they would answer
    // only when their receive times out); it never settles otherwise.
    const broadcastFailed = sending.then(
      () => new Promise<never>(() => {}),
      (error: unknown) => {
        throw new WeightSyncError(
          `weight sync v${policyVersion}: the trainer's broadcast failed (${describe(error)}); the group is broken, resume the run to form a new one`,
          { cause: error },
        );
      },
    );
    broadcastFailed.catch(() => {});
    const refused = new Map<string, string>();
    for (const [index, bucket] of group.buckets.entries()) {
      const last = index === group.buckets.length - 1;
      const loadTimeoutMs = modelCallTimeoutMs(bucketBytes(bucket), timeouts.loadBaseMs);
      const answers = await Promise.race([
        broadcastFailed,
        Promise.all(
          engines.map((member) =>
            post(
              member,
              '/update_weights_from_distributed',
              {
                ...bucket,
                group_name: group.groupName,
                // SGLang flushes after the update and fails it when requests still run, which an
                // in-place pause leaves; abort and retract leave nothing running.
                flush_cache: pauseMode !== 'in_place',
                ...(last ? { weight_version: String(policyVersion) } : {}),
              },
              loadTimeoutMs,
            ),
          ),
        ),
      ]);
      answers.forEach((answer, member) => {
        const name = engines[member]!.name;
        if (answer.kind === 'outage') {
          throw new WeightSyncError(
            `weight sync v${policyVersion}: ${name} failed during bucket ${index + 1}/${group.buckets.length}: ${answer.reason}; the group is broken, resume the run to form a new one`,
          );
        }
        if (!answer.success && !refused.has(name)) refused.set(name, answer.message);
      });
    }
    const sent = await sending;
    if (sent.policyVersion !== policyVersion) {
      throw new WeightSyncError(
        `weight sync: the trainer broadcast policy v${sent.policyVersion}, the run expected v${policyVersion}`,
      );
    }
    await endSessions(inSession, post);
    if (refused.size > 0) {
      throw new WeightSyncError(
        `weights v${sent.policyVersion} over group ${group.groupName} were refused by ${[...refused].map(([name, message]) => `${name} (${message})`).join(', ')}`,
      );
    }
    const versions = await Promise.all(engines.map(({ engine }) => engine.weightVersion()));
    const stale = versions.flatMap((version, index) =>
      version === String(policyVersion) ? [] : [`${engines[index]!.name} reports ${JSON.stringify(version)}`],
    );
    if (stale.length > 0) throw new WeightSyncError(`weight sync v${policyVersion}: ${stale.join(', ')}`);
    const finished = now();
    return {
      policyVersion: sent.policyVersion,
      exportMs: 0,
      pausedMs: finished - started,
      totalMs: finished - started,
      bytes: sent.bytes,
      engines: engines.map((member, index) => ({
        name: member.name,
        weightVersion: versions[index] ?? null,
      })),
    };
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    // No engine is left in a session or paused, whatever happened (the first failure is the one reported).
    await endSessions(inSession, post).catch((error: unknown) => {
      if (failure === null) throw error;
    });
    await Promise.allSettled(engines.map(({ engine }) => engine.continueGeneration()));
  }
}

/** Ends every open session; throws naming the engines that refused. */
async function endSessions(
  inSession: Set<GroupEngine>,
  post: (member: GroupEngine, route: string, body: unknown) => Promise<EngineAnswer>,
): Promise<void> {
  const members = [...inSession];
  inSession.clear();
  const answers = await Promise.all(members.map((member) => post(member, '/end_weight_update', {})));
  const refused = answers.flatMap((answer, index) =>
    answer.kind === 'answer' && answer.success ? [] : [`${members[index]!.name} (${reasonOf(answer)})`],
  );
  if (refused.length > 0)
    throw new WeightSyncError(`weight sync: the session could not be ended on ${refused.join(', ')}`);
}

/** Destroys the group on every engine and the trainer; what does not answer is left as it is. */
export async function destroyWeightUpdateGroup({
  trainer,
  groupName,
  engines,
  apiKey,
}: {
  trainer: Pick<WeightGroupTrainer, 'destroyWeightsUpdateGroup'> | null;
  groupName: string;
  engines: readonly Pick<GroupEngine, 'name' | 'url'>[];
  apiKey?: string;
}): Promise<string[]> {
  const answers = await Promise.all(
    engines.map((member) =>
      postEngine(member, '/destroy_weights_update_group', apiKey, DESTROY_TIMEOUT_MS, {
        group_name: groupName,
      }),
    ),
  );
  if (trainer !== null) {
    // Bounded: a trainer whose command loop is stuck (a broken broadcast) is stopped anyway.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      trainer.destroyWeightsUpdateGroup(groupName).catch(() => {}),
      new Promise((resolve) => {
        timer = setTimeout(resolve, DESTROY_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
  }
  // "does not exist" (an engine restarted since) is no failure: the group is gone either way.
  return answers.flatMap((answer, index) =>
    answer.kind === 'outage' ? [`${engines[index]!.name} (${answer.reason})`] : [],
  );
}

async function postEngine(
  member: Pick<GroupEngine, 'url'>,
  route: string,
  apiKey: string | undefined,
  timeoutMs: number,
  body: unknown,
): Promise<EngineAnswer> {
  const outcome = await longRequest({
    url: `${member.url.replace(/\/$/, '')}${route}`,
    method: 'POST',
    body: JSON.stringify(body),
    contentType: 'application/json',
    headers: apiKey === undefined ? {} : { Authorization: `Bearer ${apiKey}` },
    timeoutMs,
  });
  if (outcome.kind === 'timeout') {
    return { kind: 'outage', reason: `${route} did not answer within ${seconds(outcome.timeoutMs)}` };
  }
  if (outcome.kind === 'unreachable') return { kind: 'outage', reason: `${route}: ${outcome.error.message}` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(outcome.text);
  } catch {
    parsed = null;
  }
  const answer = answerSchema.safeParse(parsed);
  // SGLang answers a failed update 400 with { success: false, message }: a refusal, not an outage.
  if (answer.success) return { kind: 'answer', ...answer.data };
  return {
    kind: 'answer',
    success: false,
    message: `${route} answered ${outcome.status}: ${outcome.text.slice(0, 300)}`,
  };
}

function settledAnswer(outcome: PromiseSettledResult<EngineAnswer>): EngineAnswer {
  return outcome.status === 'fulfilled'
    ? outcome.value
    : { kind: 'outage', reason: describe(outcome.reason) };
}

function reasonOf(answer: EngineAnswer): string {
  return answer.kind === 'outage' ? answer.reason : answer.message;
}

function bucketBytes(bucket: WeightBucket): number {
  return bucket.shapes.reduce(
    (total, shape, index) =>
      total +
      modelBytes(
        shape.reduce((count, size) => count * size, 1),
        bucket.dtypes[index]!,
      ),
    0,
  );
}

/** SGLang's `/get_server_info` `tp_size`; 1 for a server without the route (the embedded worker). */
async function tensorParallelSize(member: GroupEngine, apiKey: string | undefined): Promise<number> {
  const outcome = await longRequest({
    url: `${member.url.replace(/\/$/, '')}/get_server_info`,
    method: 'GET',
    headers: apiKey === undefined ? {} : { Authorization: `Bearer ${apiKey}` },
    timeoutMs: 60_000,
  });
  if (outcome.kind !== 'answer' || outcome.status !== 200) return 1;
  const size = (safeJson(outcome.text) as { tp_size?: unknown } | null)?.tp_size;
  return typeof size === 'number' && Number.isInteger(size) && size > 0 ? size : 1;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The group a run formed, kept in its folder until destroyed, so a resume can destroy it first. */
const GROUP_RECORD = 'weight-group.json';
const groupRecordSchema = z.object({ groupName: z.string(), engines: z.array(z.string()) }).strict();

/** The cluster parts' weight sync over a group: formed once at the start, used after each step. */
export async function startDistributedWeightSync({
  folder,
  trainer,
  engines,
  masterAddress,
  device,
  apiKey,
  log = () => {},
}: {
  /** The run folder (the group's record). */
  folder: string;
  trainer: WeightGroupTrainer & Pick<DistributedTrainerClient, 'exportModel'>;
  engines: readonly GroupEngine[];
  /** The trainer's rank-0 host as the engines reach it (`--weight-sync-address`, or found). */
  masterAddress: string;
  /** The trainer's device (`cuda:0`, `cpu`): NCCL between GPUs, gloo otherwise. */
  device: string;
  apiKey?: string;
  log?: (line: string) => void;
}): Promise<{
  syncWeights(policyVersion: number): Promise<RlWeightSync>;
  publishModel(target: string): Promise<void>;
  close(): Promise<void>;
}> {
  const record = join(folder, GROUP_RECORD);
  if (existsSync(record)) {
    const parsed = groupRecordSchema.safeParse(safeJson(readFileSync(record, 'utf8')));
    if (parsed.success) {
      const left = await destroyWeightUpdateGroup({
        trainer,
        groupName: parsed.data.groupName,
        engines: parsed.data.engines.map((url) => ({ name: url, url })),
        ...(apiKey === undefined ? {} : { apiKey }),
      });
      log(
        `weight sync: destroyed the group ${parsed.data.groupName} of the stopped run${left.length > 0 ? ` (not answered: ${left.join(', ')})` : ''}`,
      );
    }
    await rm(record, { force: true });
  }
  const sized = await Promise.all(
    engines.map(async (member) => ({ ...member, tensorParallel: await tensorParallelSize(member, apiKey) })),
  );
  const groupName = `agentmath-weights-${process.pid}-${Date.now()}`;
  await writeFile(record, `${JSON.stringify({ groupName, engines: engines.map(({ url }) => url) })}\n`);
  const group = await openWeightUpdateGroup({
    trainer,
    engines: sized,
    masterAddress,
    backend: device.startsWith('cuda') ? 'nccl' : 'gloo',
    groupName,
    ...(apiKey === undefined ? {} : { apiKey }),
  });
  let closed = false;
  return {
    syncWeights: (policyVersion) => syncWeightsDistributed({ trainer, group, policyVersion }),
    // The weights never touch the disk during the run: `model/` is one export, written atomically.
    publishModel: async (target) => {
      await trainer.exportModel(target);
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await destroyWeightUpdateGroup({
        trainer,
        groupName,
        engines,
        ...(apiKey === undefined ? {} : { apiKey }),
      });
      await rm(record, { force: true });
    },
  };
}
