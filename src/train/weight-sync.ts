/**
 * Weight sync from disk, the way the field orders it (pause → flush → send weights → continue):
 * the trainer writes the current policy in Hugging Face layout (engines keep generating with
 * the old weights meanwhile), then every engine is paused (`in_place` keeps requests and their
 * tokens), loads the folder (`/update_weights_from_disk`), and continues. Each token an engine
 * generates after `continue` comes from the new weights; tokens from before carry the old
 * policy version in their segment. Not covered: the engines' NCCL update
 * (`update_weights_from_distributed`), which needs GPUs on both sides.
 */
import type { PauseMode } from '../engine/sglang-engine.ts';
import type { WeightUpdatableEngine } from '../engine/types.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';

/** An engine that can be paused around a weight update (SGLang's routes; the embedded worker's too). */
export type PausableEngine = WeightUpdatableEngine & {
  pauseGeneration(mode: PauseMode): Promise<void>;
  continueGeneration(): Promise<void>;
};

/** What writes the policy to disk (the distributed trainer's `/export`). */
export type PolicyExporter = { exportModel(path: string): Promise<{ path: string; policyVersion: number }> };

export type WeightSyncResult = {
  path: string;
  policyVersion: number;
  exportMs: number;
  /** From the first pause to the last continue: how long generation stood still. */
  pausedMs: number;
  totalMs: number;
};

export class WeightSyncError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('WEIGHT_SYNC_FAILED', message, options);
  }
}

export async function syncWeightsFromDisk({
  trainer,
  engines,
  path,
  pauseMode = 'in_place',
  now = () => performance.now(),
}: {
  trainer: PolicyExporter;
  engines: readonly PausableEngine[];
  path: string;
  pauseMode?: PauseMode;
  now?: () => number;
}): Promise<WeightSyncResult> {
  const started = now();
  const exported = await trainer.exportModel(path);
  const exportedAt = now();
  await Promise.all(engines.map((engine) => engine.pauseGeneration(pauseMode)));
  try {
    const results = await Promise.all(
      engines.map((engine) => engine.updateWeightsFromDisk(path, { weightVersion: exported.policyVersion })),
    );
    const failed = results
      .map((result, index) => ({ result, engine: engines[index]! }))
      .filter(({ result }) => !result.success);
    if (failed.length > 0) {
      throw new WeightSyncError(
        `weights v${exported.policyVersion} from ${path} were refused by ${failed
          .map(({ engine, result }) => `${engine.name} (${result.message})`)
          .join(', ')}`,
      );
    }
  } finally {
    // Continue even after a failure: a paused engine would hold every request forever.
    await Promise.allSettled(engines.map((engine) => engine.continueGeneration()));
  }
  const finished = now();
  return {
    path,
    policyVersion: exported.policyVersion,
    exportMs: exportedAt - started,
    pausedMs: finished - exportedAt,
    totalMs: finished - started,
  };
}
