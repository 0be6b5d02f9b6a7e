/**
 * Starts `train rl`'s parts from its configuration: the colocated worker for the embedded byte
 * model, the cluster layout (engine replicas, distributed trainer, weight sync) for a Hugging
 * Face model. Options that only the cluster layout has are refused for the byte model.
 */

import { isHuggingFaceModelFolder } from '../model/index.ts';
import { startClusterParts } from './rl-cluster-parts.ts';
import { startColocatedParts } from './rl-colocated-parts.ts';
import { type RlConfig, RlConfigError, resolveRlConfig } from './rl-config.ts';
import type { RlParts } from './rl-parts.ts';
import { startedTrainerFlags, trainerMemoryOptions } from './trainer-memory-options.ts';
import { weightSyncMasterAddress } from './weight-sync-address.ts';

function memoryDefaults(): RlConfig {
  return resolveRlConfig({ init: 'defaults' });
}

export async function startRlParts(
  config: RlConfig,
  folder: string,
  log: (line: string) => void = () => {},
  signal?: AbortSignal,
): Promise<RlParts> {
  if (!isHuggingFaceModelFolder(config.init)) {
    const clusterOnly: [string, boolean][] = [
      ['--engine', config.engines.length > 0],
      ['--replicas', config.replicas > 1],
      ['--trainer', config.trainerUrl !== null],
      ['--trainer-procs', config.trainerProcs > 1],
      ['--sandbox', config.sandboxes.length > 0],
      ['--weight-sync distributed', config.weightSync === 'distributed'],
      ['--weight-sync-address', config.weightSyncAddress !== null],
    ];
    if (config.maxStaleness > 0) clusterOnly.push(['--max-staleness above 0', true]);
    for (const flag of startedTrainerFlags(config, memoryDefaults())) clusterOnly.push([flag, true]);
    if (config.dialect !== 'tags') clusterOnly.push([`--dialect ${config.dialect}`, true]);
    const given = clusterOnly.filter(([, set]) => set).map(([flag]) => flag);
    if (given.length > 0) {
      throw new RlConfigError(
        `${given.join(', ')}: for a Hugging Face model (--model HF_DIR); ${config.init} is the embedded byte model, trained colocated in one worker`,
      );
    }
    return startColocatedParts({
      model: config.init,
      seed: config.seed,
      trainThreads: config.trainThreads,
      sandboxWorkers: config.sandboxWorkers,
      prompt: config.prompt ?? 'problem-only',
      workerLog: log,
    });
  }
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
    trainerMemory: trainerMemoryOptions(config),
    klReference: config.klCoef > 0,
    sandboxes: config.sandboxes,
    sandboxWorkers: config.sandboxWorkers,
    prompt: config.prompt ?? 'instructed',
    dialect: config.dialect,
    seed: config.seed,
    weightSync: config.weightSync,
    weightSyncAddress,
    temperature: config.temperature,
    log,
    ...(signal === undefined ? {} : { signal }),
  });
}
