/**
 * `--logger tensorboard|wandb`: the run's per-step scalars, beside our own files (metrics.jsonl
 * stays the record; a logger is a view of it in the tools RL users watch curves in).
 * TensorBoard event files are written here in TypeScript (no package, offline); wandb goes
 * through a Python sidecar, offline unless WANDB_MODE says otherwise. The configuration a logger
 * receives has its secrets (tokens, API keys, passwords) replaced, whatever the caller passed.
 */
import { openTensorBoardLogger } from './tensorboard-logger.ts';
import type { MetricsLogger } from './types.ts';
import { openWandbLogger } from './wandb-logger.ts';

export const METRICS_LOGGER_KINDS = ['tensorboard', 'wandb'] as const;
export type MetricsLoggerKind = (typeof METRICS_LOGGER_KINDS)[number];

export type MetricsLoggerOptions = {
  kind: MetricsLoggerKind;
  /** The run folder. */
  folder: string;
  runName: string;
  config: unknown;
  /** The first step of a resumed run (TensorBoard drops the earlier process's points from there). */
  resumeFromStep?: number;
  /** The sidecar's interpreter (wandb; default the trainer's). */
  python?: string;
  environment?: NodeJS.ProcessEnv;
  onLog?: (line: string) => void;
};

/** Opens the logger; a wandb logger fails here (not at the first step) when wandb is missing. */
export async function openMetricsLogger(options: MetricsLoggerOptions): Promise<MetricsLogger> {
  const { kind, folder, runName } = options;
  const config = redactSecrets(options.config);
  if (kind === 'tensorboard') {
    return openTensorBoardLogger({
      folder,
      runName,
      config,
      ...(options.resumeFromStep === undefined ? {} : { resumeFromStep: options.resumeFromStep }),
    });
  }
  return openWandbLogger({
    folder,
    runName,
    config,
    ...(options.python === undefined ? {} : { python: options.python }),
    ...(options.environment === undefined ? {} : { environment: options.environment }),
    ...(options.onLog === undefined ? {} : { onLog: options.onLog }),
  });
}

const SECRET_KEY = /(token|api_?key|secret|password)$/i;

/** A copy of `value` with the values of secret-named keys (`token`, `apiKey`, …) replaced. */
export function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      SECRET_KEY.test(key) && inner !== null && inner !== undefined ? '[redacted]' : redactSecrets(inner),
    ]),
  );
}

/**
 * The numeric fields of a metrics row, nested objects flattened with '/'
 * (`{ time: { trainMs: 3 } }` → `{ 'time/trainMs': 3 }`); booleans become 0/1; strings,
 * nulls and arrays are left out. `step` itself is left out (it is the x axis).
 */
export function metricScalars(row: Record<string, unknown>, prefix = ''): Record<string, number> {
  const scalars: Record<string, number> = {};
  for (const [key, value] of Object.entries(row)) {
    const tag = prefix === '' ? key : `${prefix}/${key}`;
    if (prefix === '' && key === 'step') continue;
    if (typeof value === 'number') scalars[tag] = value;
    else if (typeof value === 'boolean') scalars[tag] = value ? 1 : 0;
    else if (typeof value === 'object' && value !== null && !Array.isArray(value))
      Object.assign(scalars, metricScalars(value as Record<string, unknown>, tag));
  }
  return scalars;
}
