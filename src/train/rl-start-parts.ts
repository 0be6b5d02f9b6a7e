/**
 * Starts `train rl`'s parts from its configuration: for every model the same layout, as on a GPU
 * cluster — engine replicas behind the router (started here, or SGLang / vLLM servers by URL),
 * the trainer (started here, or by URL), a sandbox, and the weights synced to the engines after
 * each step (`rl-cluster-parts.ts`). On one machine that is one local engine replica, one
 * trainer rank and a disk sync, the byte model included. The prompt and dialect default to what
 * the model declares (`training-prompt.json`, written by `train sft`), else instructed in tags.
 */

import { readTrainingPrompt } from '../model/index.ts';
import { MAX_LOCAL_WORKERS } from '../sandbox/index.ts';
import { startClusterParts } from './rl-cluster-parts.ts';
import { type RlConfig, RlConfigError, resolveRlConfig } from './rl-config.ts';
import type { RlParts } from './rl-parts.ts';
import { startedTrainerFlags, trainerMemoryOptions } from './trainer-memory-options.ts';
import { weightSyncMasterAddress } from './weight-sync-address.ts';

function memoryDefaults(): RlConfig {
  return resolveRlConfig({ init: 'defaults' });
}

/** The prompt builder and dialect a run uses: given, else the model's declaration, else instructed in tags. */
export async function rlPromptOf(
  config: RlConfig,
): Promise<{ prompt: NonNullable<RlConfig['prompt']>; dialect: 'tags' | 'markdown' }> {
  const declared = await readTrainingPrompt(config.init);
  return {
    prompt: config.prompt ?? declared?.prompt ?? 'instructed',
    dialect: config.dialect ?? declared?.dialect ?? 'tags',
  };
}

export async function startRlParts(
  config: RlConfig,
  folder: string,
  log: (line: string) => void = () => {},
  signal?: AbortSignal,
): Promise<RlParts> {
  const elsewhere = config.trainerUrl === null ? [] : startedTrainerFlags(config, memoryDefaults());
  if (elsewhere.length > 0) {
    throw new RlConfigError(
      `${elsewhere.join(', ')}: for the trainer train rl starts; the trainer at ${config.trainerUrl} keeps the options it was started with (\`agentmath trainer serve\`)`,
    );
  }
  if (config.trainerUrl === null && config.trainerProcs % config.sequenceParallel !== 0) {
    throw new RlConfigError(
      `--sp ${config.sequenceParallel}: must divide --trainer-procs ${config.trainerProcs} (the trainer's ranks are data-parallel groups of --sp ranks)`,
    );
  }
  if (config.weightSync === 'distributed' && config.api !== 'sglang') {
    throw new RlConfigError(
      `--weight-sync distributed with --api ${config.api}: the process-group update follows SGLang's routes (/init_weights_update_group, /update_weights_from_distributed); use --api sglang or --weight-sync disk`,
    );
  }
  const { prompt, dialect } = await rlPromptOf(config);
  let weightSyncAddress: string | null = null;
  if (config.weightSync === 'distributed') {
    const master = await weightSyncMasterAddress({
      given: config.weightSyncAddress,
      trainerUrl: config.trainerUrl,
      engineUrls: config.engines,
    });
    if ('refusal' in master) throw new RlConfigError(master.refusal);
    weightSyncAddress = master.address;
  } else if (config.weightSyncAddress !== null) {
    throw new RlConfigError(
      '--weight-sync-address: for --weight-sync distributed (the disk sync forms no group)',
    );
  }
  return startClusterParts({
    folder,
    model: config.init,
    engines: config.engines,
    api: config.api,
    replicas: config.replicas,
    router: config.router,
    maxInFlight: config.maxInFlight,
    trainerUrl: config.trainerUrl,
    trainerProcesses: config.trainerProcs,
    trainerThreads: config.trainThreads,
    trainerMemory: trainerMemoryOptions(config),
    klReference: config.klCoef > 0,
    sandboxes: config.sandboxes,
    sandboxWorkers: localSandboxWorkers(config),
    sandboxPreload: config.sandboxPreload,
    prompt,
    dialect,
    seed: config.seed,
    weightSync: config.weightSync,
    weightSyncAddress,
    temperature: config.temperature,
    log,
    ...(signal === undefined ? {} : { signal }),
  });
}

/**
 * Jailed workers of the local sandbox: as configured, else one per request the engines may
 * have in flight (a worker serves one trajectory's session, so fewer make trajectories wait).
 */
export function localSandboxWorkers(
  config: Pick<RlConfig, 'sandboxWorkers' | 'maxInFlight' | 'engines' | 'replicas'>,
): number {
  const inFlight = config.maxInFlight * (config.engines.length > 0 ? config.engines.length : config.replicas);
  return config.sandboxWorkers ?? Math.min(MAX_LOCAL_WORKERS, inFlight);
}
