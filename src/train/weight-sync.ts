/**
 * Weight sync from disk, in the order SGLang's own code needs (read at SGLang 0.5.23; the lines
 * are in docs/engines.md): the trainer writes the policy in Hugging Face layout (engines keep
 * generating meanwhile), then on every engine
 *   1. pause with `abort`: running requests end now and answer their tokens so far (the agent
 *      loop resubmits `prompt + tokens so far`, which waits in the engine until step 4);
 *   2. flush, retried until it succeeds: SGLang refuses a flush while a request still runs,
 *      and after loading weights it flushes again and fails the update (HTTP 400; an assert
 *      that kills the scheduler before 0.5.23) when that flush fails — which an `in_place`
 *      pause, whose requests keep running, guarantees;
 *   3. load the folder with `weight_version` N and check the version the engine reports;
 *   4. continue.
 * An engine that answers and refuses (a 4xx, `success: false`, a flush that never succeeds, a
 * version it does not report) stops the sync with an error naming it and its message; only an
 * engine that cannot be connected to, or does not answer in time (a load's time grows with the
 * model: `loadTimeoutMs`), is "unreachable", an outage with its cause (skipped when tolerated,
 * and said so), never a refusal.
 * `updateWhilePaused` is steps 1–4 around any update, for other ways of sending the weights.
 */
import { EngineTimeoutError, EngineUnavailableError } from '../engine/engine-errors.ts';
import type { PauseMode } from '../engine/sglang-engine.ts';
import type { WeightUpdatableEngine, WeightUpdateResult } from '../engine/types.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { type Clock, systemClock } from '../shared/clock.ts';

/** An engine that can be paused, flushed and asked its weight version around an update. */
export type PausableEngine = WeightUpdatableEngine & {
  pauseGeneration(mode: PauseMode): Promise<void>;
  continueGeneration(): Promise<void>;
  /** Flushes the engine's caches; `success: false` while requests still hold them. */
  flushCache(): Promise<WeightUpdateResult>;
  /** The weight version the engine reports now (null when it has none). */
  weightVersion(): Promise<string | null>;
};

/** What writes the policy to disk (the distributed trainer's `/export`). */
export type PolicyExporter = { exportModel(path: string): Promise<{ path: string; policyVersion: number }> };

/** One engine after a sync: the version it reports (null: unreachable, skipped). */
export type EngineSyncRecord = { name: string; weightVersion: string | null };

export type WeightSyncResult = {
  path: string;
  policyVersion: number;
  exportMs: number;
  /** From the first pause to the last continue: how long generation stood still. */
  pausedMs: number;
  totalMs: number;
  /**
   * Engines that could not be connected to: they keep their old weights and are tried again at
   * the next sync. Empty unless `tolerateUnreachable`.
   */
  unreachable: string[];
  /** Every engine with the weight version it reported after the update. */
  engines: EngineSyncRecord[];
};

export class WeightSyncError extends AgentMathError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('WEIGHT_SYNC_FAILED', message, options);
  }
}

/** How the flush of step 2 is retried: `attempts` tries, `delayMs` apart. */
export type FlushRetry = { attempts: number; delayMs: number };

const DEFAULT_FLUSH_RETRY: FlushRetry = { attempts: 60, delayMs: 500 };

export async function syncWeightsFromDisk({
  trainer,
  engines,
  path,
  tolerateUnreachable = false,
  flushRetry = DEFAULT_FLUSH_RETRY,
  clock = systemClock,
  loadTimeoutMs,
}: {
  trainer: PolicyExporter;
  engines: readonly PausableEngine[];
  path: string;
  /** How long one engine's load may take (`model-call-timeout.ts`); default: the engine client's. */
  loadTimeoutMs?: number;
  /**
   * Go on when some (not all) engines cannot be reached, e.g. a replica killed mid-run (the
   * router already sends its work elsewhere). An engine that answers and refuses the weights is
   * always an error: it would keep serving another policy.
   */
  tolerateUnreachable?: boolean;
  flushRetry?: FlushRetry;
  clock?: Clock;
}): Promise<WeightSyncResult> {
  const started = clock.now();
  const exported = await trainer.exportModel(path);
  const exportedAt = clock.now();
  const updated = await updateWhilePaused({
    engines,
    policyVersion: exported.policyVersion,
    what: `weights v${exported.policyVersion} from ${path}`,
    update: (engine) =>
      engine.updateWeightsFromDisk(path, {
        weightVersion: exported.policyVersion,
        ...(loadTimeoutMs === undefined ? {} : { timeoutMs: loadTimeoutMs }),
      }),
    tolerateUnreachable,
    flushRetry,
    clock,
  });
  const finished = clock.now();
  return {
    path,
    policyVersion: exported.policyVersion,
    exportMs: exportedAt - started,
    pausedMs: finished - exportedAt,
    totalMs: finished - started,
    ...updated,
  };
}

/**
 * Pause (abort) → flush until it succeeds → `update` → check the reported version → continue,
 * on every engine at once. Throws `WeightSyncError` naming each engine that refused; every
 * engine is continued whatever happened.
 */
export async function updateWhilePaused({
  engines,
  policyVersion,
  what,
  update,
  tolerateUnreachable,
  flushRetry,
  clock,
}: {
  engines: readonly PausableEngine[];
  policyVersion: number;
  /** The update in words, for errors (`weights v3 from /run/policy/v000003`). */
  what: string;
  update: (engine: PausableEngine) => Promise<WeightUpdateResult>;
  tolerateUnreachable: boolean;
  flushRetry: FlushRetry;
  clock: Clock;
}): Promise<{ unreachable: string[]; engines: EngineSyncRecord[] }> {
  const unreachable = new Map<PausableEngine, unknown>();
  const refused: string[] = [];
  const versions = new Map<PausableEngine, string | null>();
  const live = () => engines.filter((engine) => !unreachable.has(engine));
  /**
   * Runs `action` on every live engine; no connection, or no answer in time, is an outage (it
   * marks the engine unreachable, with its cause); any other failure refuses.
   */
  const onEach = async (action: (engine: PausableEngine) => Promise<string | null>) => {
    const current = live();
    const outcomes = await Promise.allSettled(current.map(action));
    outcomes.forEach((outcome, index) => {
      const engine = current[index]!;
      if (outcome.status === 'rejected') {
        if (outcome.reason instanceof EngineUnavailableError || outcome.reason instanceof EngineTimeoutError)
          unreachable.set(engine, outcome.reason);
        else refused.push(`${engine.name} (${describe(outcome.reason)})`);
      } else if (outcome.value !== null) refused.push(`${engine.name} (${outcome.value})`);
    });
    if (refused.length > 0) throw new WeightSyncError(`${what}: refused by ${refused.join(', ')}`);
  };
  try {
    await onEach(async (engine) => {
      await engine.pauseGeneration('abort');
      return null;
    });
    await onEach((engine) => flushUntilDone(engine, flushRetry, clock));
    await onEach(async (engine) => {
      const result = await update(engine);
      return result.success ? null : result.message;
    });
    await onEach(async (engine) => {
      const version = await engine.weightVersion();
      versions.set(engine, version);
      return version === String(policyVersion)
        ? null
        : `it reports weight_version ${JSON.stringify(version)} after loading v${policyVersion}`;
    });
    if (unreachable.size > 0 && (!tolerateUnreachable || live().length === 0)) {
      const cause = [...unreachable.values()][0];
      throw new WeightSyncError(
        `${what}: ${[...unreachable.keys()].map((lost) => lost.name).join(', ')} could not be reached (${describe(cause)})${live().length === 0 ? '; no engine left' : ''}`,
        { cause },
      );
    }
  } finally {
    // Continue every engine, even after a failure and even one counted unreachable (its pause
    // may have taken effect with the answer lost): a paused engine would hold its requests forever.
    await Promise.allSettled(engines.map((engine) => engine.continueGeneration()));
  }
  return {
    unreachable: [...unreachable.keys()].map((engine) => engine.name),
    engines: engines.map((engine) => ({ name: engine.name, weightVersion: versions.get(engine) ?? null })),
  };
}

/** Null once a flush succeeded; else the engine's last reason after `attempts` tries. */
export async function flushUntilDone(
  engine: PausableEngine,
  retry: FlushRetry = DEFAULT_FLUSH_RETRY,
  clock: Clock = systemClock,
): Promise<string | null> {
  let last = '';
  for (let attempt = 1; attempt <= retry.attempts; attempt++) {
    const result = await engine.flushCache();
    if (result.success) return null;
    last = result.message;
    if (attempt < retry.attempts) await clock.sleep(retry.delayMs);
  }
  return `its cache flush still failed after ${retry.attempts} tries, ${retry.delayMs} ms apart: ${last}`;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
