/**
 * Starts `train rl`'s parts from its configuration: the colocated worker for the embedded byte
 * model, the cluster layout (engine replicas, distributed trainer, weight sync) for a Hugging
 * Face model. Options that only the cluster layout has are refused for the byte model.
 */

import { isHuggingFaceModelFolder } from './hf-sft-run.ts';
import { startClusterParts } from './rl-cluster-parts.ts';
import { startColocatedParts } from './rl-colocated-parts.ts';
import { type RlConfig, RlConfigError } from './rl-config.ts';
import type { RlParts } from './rl-parts.ts';

export async function startRlParts(
  config: RlConfig,
  folder: string,
  log: (line: string) => void = () => {},
): Promise<RlParts> {
  if (config.weightSync === 'distributed') {
    throw new RlConfigError(
      '--weight-sync distributed (an NCCL group between trainer and engines) needs GPUs on both sides and is not built yet; use disk (docs/rl.md, "RL on a GPU cluster")',
    );
  }
  if (!isHuggingFaceModelFolder(config.init)) {
    const clusterOnly: [string, boolean][] = [
      ['--engine', config.engines.length > 0],
      ['--replicas', config.replicas > 1],
      ['--trainer', config.trainerUrl !== null],
      ['--trainer-procs', config.trainerProcs > 1],
      ['--sandbox', config.sandboxes.length > 0],
    ];
    if (config.maxStaleness > 0) clusterOnly.push(['--max-staleness above 0', true]);
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
    microBatchTokens: config.microBatchTokens,
    sandboxes: config.sandboxes,
    sandboxWorkers: config.sandboxWorkers,
    prompt: config.prompt ?? 'instructed',
    dialect: config.dialect,
    seed: config.seed,
    log,
  });
}
