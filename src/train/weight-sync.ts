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
  /**
   * Engines that could not be reached (pause or load failed to connect): they keep their old
   * weights and are tried again at the next sync. Empty unless `tolerateUnreachable`.
   */
  unreachable: string[];
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
  tolerateUnreachable = false,
  now = () => performance.now(),
}: {
  trainer: PolicyExporter;
  engines: readonly PausableEngine[];
  path: string;
  pauseMode?: PauseMode;
  /**
   * Go on when some (not all) engines cannot be reached, e.g. a replica killed mid-run (the
   * router already sends its work elsewhere). An engine that answers and refuses the weights is
   * always an error: it would keep serving another policy.
   */
  tolerateUnreachable?: boolean;
  now?: () => number;
}): Promise<WeightSyncResult> {
  const started = now();
  const exported = await trainer.exportModel(path);
  const exportedAt = now();
  const unreachable = new Map<PausableEngine, unknown>();
  const paused = await Promise.allSettled(engines.map((engine) => engine.pauseGeneration(pauseMode)));
  paused.forEach((outcome, index) => {
    if (outcome.status === 'rejected') unreachable.set(engines[index]!, outcome.reason);
  });
  const reachable = () => engines.filter((engine) => !unreachable.has(engine));
  try {
    const live = reachable();
    const results = await Promise.allSettled(
      live.map((engine) => engine.updateWeightsFromDisk(path, { weightVersion: exported.policyVersion })),
    );
    const refused: string[] = [];
    results.forEach((outcome, index) => {
      const engine = live[index]!;
      if (outcome.status === 'rejected') unreachable.set(engine, outcome.reason);
      else if (!outcome.value.success) refused.push(`${engine.name} (${outcome.value.message})`);
    });
    if (refused.length > 0) {
      throw new WeightSyncError(
        `weights v${exported.policyVersion} from ${path} were refused by ${refused.join(', ')}`,
      );
    }
    if (unreachable.size > 0 && (!tolerateUnreachable || reachable().length === 0)) {
      const cause = [...unreachable.values()][0];
      throw new WeightSyncError(
        `weights v${exported.policyVersion}: ${[...unreachable.keys()].map((lost) => lost.name).join(', ')} could not be reached (${describe(cause)})${reachable().length === 0 ? '; no engine left' : ''}`,
        { cause },
      );
    }
  } finally {
    // Continue every engine, even after a failure and even one counted unreachable (its pause
    // may have taken effect with the answer lost): a paused engine would hold its requests forever.
    await Promise.allSettled(engines.map((engine) => engine.continueGeneration()));
  }
  const finished = now();
  return {
    path,
    policyVersion: exported.policyVersion,
    exportMs: exportedAt - started,
    pausedMs: finished - exportedAt,
    totalMs: finished - started,
    unreachable: [...unreachable.keys()].map((engine) => engine.name),
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
