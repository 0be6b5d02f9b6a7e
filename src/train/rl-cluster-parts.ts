/**
 * `train rl`'s parts, for every model, laid out as on a GPU cluster: engine replicas behind the
 * router (SGLang servers by URL, or `replicas` local engines started here on the model, which
 * speak the same routes), the trainer (by URL, or started here with `trainerProcesses` ranks:
 * torchrun from two up), sandbox nodes by URL or a local jailed sandbox. On one machine: one
 * local engine, one trainer rank, a disk sync.
 * After each trainer step the weights go to every engine from disk (`weight-sync.ts`): the
 * trainer exports the policy to `<run>/policy/v<N>`; each engine is paused (`abort`: requests
 * answer their tokens so far and are resubmitted), flushed, loads it with `weight_version` N
 * (SGLang's `/update_weights_from_disk`, or vLLM's `reload_weights` through `/collective_rpc`)
 * and continues, so every token records the version that produced it. A replica that cannot be
 * connected to is skipped (its work was already rerouted), said so, and tried again at the next
 * sync; one that answers and refuses the weights stops the run. `publishModel` moves the last synced
 * export to `<run>/model`. With engines or a trainer on other machines, the run folder must be
 * on storage all of them see (the engines read the export by path).
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type PromptBuilderName, promptBuilders, SessionPark } from '../agent/index.ts';
import { createEngine, type HttpEngine } from '../engine/create-engine.ts';
import { loadTokenizer } from '../engine/load-tokenizer.ts';
import { modelContextLength, startEmbeddedEngine } from '../engine/local/embedded-engine.ts';
import { ENGINE_API_KEY_VARIABLE } from '../engine/local/worker-supervisor.ts';
import { createRouterPolicy, Router, type RouterPolicyName } from '../engine/router/index.ts';
import { type DialectName, getDialect } from '../protocol/index.ts';
import { createLocalSandbox, SandboxClusterClient } from '../sandbox/index.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { systemClock } from '../shared/clock.ts';
import { DistributedTrainerClient } from './distributed-trainer-client.ts';
import { startDistributedWeightSync } from './distributed-weight-sync.ts';
import { LOAD_BASE_MS, modelBytes, modelCallTimeoutMs } from './model-call-timeout.ts';
import type { RlParts } from './rl-parts.ts';
import type { TrainerMemoryOptions } from './trainer-memory-options.ts';
import { startTrainerService, type TrainerService } from './trainer-service.ts';
import { vllmLogprobsMode } from './vllm-logprobs-probe.ts';
import { type PausableEngine, syncWeightsFromDisk } from './weight-sync.ts';

export type ClusterPartsOptions = {
  /** Aborting it stops the trainer's start at once (a SIGTERM during start-up). */
  signal?: AbortSignal;
  /** The run folder (exports go to `policy/`, the published model to `model/`). */
  folder: string;
  /** The Hugging Face model folder RL starts from (`--model`). */
  model: string;
  /** Engine URLs (`--engine`); empty: start `replicas` embedded workers on the model. */
  engines: string[];
  api: 'sglang' | 'vllm';
  replicas: number;
  router: RouterPolicyName;
  /** Requests in flight per replica. */
  maxInFlight: number;
  /** The trainer's URL (`--trainer`); null: start it here with `trainerProcesses` ranks. */
  trainerUrl: string | null;
  trainerProcesses: number;
  /** Torch threads of each trainer rank started here (0: its share of the cores). */
  trainerThreads?: number;
  /** The memory options of a trainer started here (--micro-batch-tokens, --activation-checkpointing, …). */
  trainerMemory: TrainerMemoryOptions;
  /** Whether steps take a KL term (klCoef > 0): a trainer started here then loads its reference at the start. */
  klReference?: boolean;
  /** Sandbox node URLs (`--sandbox`); empty: a local jailed sandbox. */
  sandboxes: string[];
  sandboxWorkers: number;
  /** Modules a local sandbox worker imports before its session (null: the sandbox's default). */
  sandboxPreload?: string[] | null;
  prompt: PromptBuilderName;
  dialect: DialectName;
  seed: number;
  /** How weights reach the engines: an export loaded from disk, or broadcast over a process group. */
  weightSync?: 'disk' | 'distributed';
  /** `distributed`: the trainer's rank-0 address as the engines reach it (`weight-sync-address.ts`). */
  weightSyncAddress?: string | null;
  engineTimeoutMs?: number;
  /** The rollout's sampling temperature: vLLM engines are checked to return logprobs after it. */
  temperature?: number;
  log?: (line: string) => void;
};

export class RlPartsError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('RL_PARTS_FAILED', message, options);
  }
}

const POLICY_FOLDER = 'policy';

export async function startClusterParts(options: ClusterPartsOptions): Promise<RlParts> {
  const log = options.log ?? (() => {});
  const contextTokens = modelContextLength(options.model);
  if (contextTokens === null) {
    throw new RlPartsError(
      `${join(options.model, 'config.json')}: no max_position_embeddings (the context length)`,
    );
  }
  const closers: (() => Promise<void> | void)[] = [];
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    for (const closer of closers.splice(0).reverse()) await Promise.resolve(closer()).catch(() => {});
  };
  try {
    const tokenizer = await loadTokenizer(options.model);
    const replicas = await startReplicas(options, closers, log);
    if (options.api === 'vllm') await assertScaledLogprobs(options, tokenizer.encode('The answer is'), log);
    const trainer = await startTrainer(options, closers, log);
    const router = new Router({
      replicas: replicas.map(({ name, engine }) => ({ name, engine })),
      policy: createRouterPolicy(options.router),
      clock: systemClock,
      maxInFlightPerReplica: options.maxInFlight,
    });
    const sandbox: SandboxProvider =
      options.sandboxes.length === 0
        ? createLocalSandbox({
            maxWorkers: options.sandboxWorkers,
            warmWorkers: Math.min(2, options.sandboxWorkers),
            ...(options.sandboxPreload == null ? {} : { preload: options.sandboxPreload }),
          })
        : new SandboxClusterClient({ nodes: options.sandboxes, log });
    closers.push(() => sandbox.close());
    const park = new SessionPark();
    closers.push(() => park.closeAll());
    const state = await trainer.client.state();
    let lastExport: string | null = null;
    const distributed =
      options.weightSync === 'distributed'
        ? await startDistributedWeightSync({
            folder: options.folder,
            trainer: trainer.client,
            engines: replicas,
            masterAddress: options.weightSyncAddress ?? '127.0.0.1',
            device: state.device,
            log,
            ...(options.engines.length > 0 && engineApiKey() !== undefined
              ? { apiKey: engineApiKey() as string }
              : {}),
          })
        : null;
    if (distributed !== null) {
      closers.push(() => distributed.close());
      log(`weight sync: a process group of the trainer and ${replicas.length} engine(s)`);
    }
    // A load of the whole model may take as long as the rule of `model-call-timeout.ts` says.
    const loadTimeoutMs = modelCallTimeoutMs(modelBytes(state.parameters, state.computeDtype), LOAD_BASE_MS);
    return {
      engine: router,
      routerName: options.router,
      evalUrl: replicas[0]!.url,
      ...(options.engines.length > 0 && engineApiKey() !== undefined
        ? { evalApiKey: engineApiKey() as string }
        : {}),
      trainer: trainer.client,
      syncWeights: async (policyVersion) => {
        if (distributed !== null) return distributed.syncWeights(policyVersion);
        const path = join(options.folder, POLICY_FOLDER, `v${String(policyVersion).padStart(6, '0')}`);
        await mkdir(join(options.folder, POLICY_FOLDER), { recursive: true });
        const result = await syncWeightsFromDisk({
          trainer: trainer.client,
          engines: replicas.map(({ engine }) => engine),
          path,
          tolerateUnreachable: true,
          loadTimeoutMs,
        });
        if (result.unreachable.length > 0) {
          log(`weight sync v${result.policyVersion}: ${result.unreachable.join(', ')} unreachable, skipped`);
        }
        lastExport = path;
        return {
          policyVersion: result.policyVersion,
          exportMs: result.exportMs,
          pausedMs: result.pausedMs,
          totalMs: result.totalMs,
          engines: result.engines,
        };
      },
      publishModel: async (folder, { final }) => {
        if (distributed !== null) {
          if (final) await distributed.publishModel(join(folder, 'model'));
          return;
        }
        if (lastExport === null) return;
        const target = join(folder, 'model');
        await rm(target, { recursive: true, force: true });
        await rename(lastExport, target);
        lastExport = null;
        await removeOldExports(join(folder, POLICY_FOLDER));
      },
      tokenizer,
      dialect: getDialect(options.dialect),
      prompt: promptBuilders[options.prompt],
      contextTokens,
      parameters: state.parameters,
      sandbox,
      park,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

type Replica = { name: string; url: string; engine: HttpEngine & PausableEngine };

async function startReplicas(
  options: ClusterPartsOptions,
  closers: (() => Promise<void> | void)[],
  log: (line: string) => void,
): Promise<Replica[]> {
  const timeout = options.engineTimeoutMs === undefined ? {} : { timeoutMs: options.engineTimeoutMs };
  if (options.engines.length > 0) {
    const apiKey = engineApiKey();
    return options.engines.map((url) => {
      const engine = createEngine({
        api: options.api,
        url,
        maxConcurrency: options.maxInFlight,
        ...(apiKey === undefined ? {} : { apiKey }),
        ...timeout,
      }) as HttpEngine & PausableEngine;
      closers.push(() => engine.close());
      return { name: url, url, engine };
    });
  }
  log(`starting ${options.replicas} engine replica(s) of ${options.model} …`);
  const started = await Promise.allSettled(
    Array.from({ length: options.replicas }, () =>
      startEmbeddedEngine({
        model: options.model,
        maxConcurrency: options.maxInFlight,
        ...timeout,
        onLog: (line, stream) => {
          if (stream === 'stderr' && /error|traceback/i.test(line)) log(`engine: ${line}`);
        },
      }),
    ),
  );
  for (const outcome of started)
    if (outcome.status === 'fulfilled') closers.push(() => outcome.value.close());
  const failed = started.find((outcome) => outcome.status === 'rejected');
  if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  return started.map((outcome, index) => {
    const embedded = (outcome as PromiseFulfilledResult<Awaited<ReturnType<typeof startEmbeddedEngine>>>)
      .value;
    return {
      name: `replica-${index}`,
      url: embedded.worker.url,
      engine: embedded.engine as HttpEngine & PausableEngine,
    };
  });
}

async function startTrainer(
  options: ClusterPartsOptions,
  closers: (() => Promise<void> | void)[],
  log: (line: string) => void,
): Promise<{ client: DistributedTrainerClient; service: TrainerService | null }> {
  if (options.trainerUrl !== null) {
    const token = process.env.AGENTMATH_TRAINER_TOKEN || undefined;
    return {
      client: new DistributedTrainerClient({
        baseUrl: options.trainerUrl,
        ...(token === undefined ? {} : { token }),
      }),
      service: null,
    };
  }
  log(
    `starting the trainer: ${options.trainerProcesses} process(es)${options.trainerProcesses > 1 ? ' under torchrun' : ''} …`,
  );
  const service = await startTrainerService({
    model: options.model,
    // The KL reference is the initial policy, also after a resume. Named, the trainer loads it
    // at its start (sharded, in the compute dtype); without KL it never holds one.
    ...(options.klReference ? { reference: options.model } : {}),
    processes: options.trainerProcesses,
    ...(options.trainerThreads === undefined ? {} : { threads: options.trainerThreads }),
    ...options.trainerMemory,
    seed: options.seed,
    onLog: (line) => {
      if (/error|traceback/i.test(line)) log(`trainer: ${line}`);
    },
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  closers.push(() => service.stop());
  return { client: service.client, service };
}

/**
 * vLLM engines must return logprobs after temperature (`--logprobs-mode processed_logprobs`) when
 * the rollout samples at T ≠ 1: refused at the start otherwise (`vllm-logprobs-probe.ts`).
 */
async function assertScaledLogprobs(
  options: ClusterPartsOptions,
  promptTokenIds: number[],
  log: (line: string) => void,
): Promise<void> {
  const temperature = options.temperature ?? 1;
  if (temperature === 1 || temperature <= 0) return;
  const apiKey = engineApiKey();
  for (const url of options.engines) {
    const mode = await vllmLogprobsMode({
      url,
      promptTokenIds,
      temperature,
      ...(apiKey === undefined ? {} : { apiKey }),
    });
    if (mode === 'raw') {
      throw new RlPartsError(
        `${url}: vLLM returns logprobs before temperature (its default --logprobs-mode raw_logprobs), so the importance weight at --temperature ${temperature} would be biased: restart it with --logprobs-mode processed_logprobs`,
      );
    }
    if (mode === 'unknown') {
      log(
        `${url}: could not tell whether its logprobs are taken after temperature (start vLLM with --logprobs-mode processed_logprobs)`,
      );
    }
  }
}

/** The engines' bearer token (`AGENTMATH_ENGINE_API_KEY`), for engines given by URL. */
function engineApiKey(): string | undefined {
  return process.env[ENGINE_API_KEY_VARIABLE] || undefined;
}

/** Exports already published or superseded (a kill between export and publish leaves one). */
async function removeOldExports(folder: string): Promise<void> {
  if (!existsSync(folder)) return;
  for (const name of await readdir(folder)) await rm(join(folder, name), { recursive: true, force: true });
}
