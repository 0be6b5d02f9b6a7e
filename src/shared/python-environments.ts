/**
 * Where the project's two Python interpreters live. `scripts/setup.sh` creates both from
 * `uv.lock`: `.venv` (PyTorch, transformers: the worker and the trainer) and `.venv-jail`
 * (SymPy, NumPy, SciPy, Math-Verify: what code sees inside the sandbox's jail). An environment
 * variable overrides each, for a machine that keeps its Python elsewhere.
 */
import { fileURLToPath } from 'node:url';

/** The repository root (this file is `src/shared/…`). */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Overrides the worker's and trainer's interpreter. */
export const TRAINER_PYTHON_VARIABLE = 'AGENTMATH_PYTHON';
/** Overrides the sandbox's interpreter (the jail binds its environment read-only). */
export const JAIL_PYTHON_VARIABLE = 'AGENTMATH_JAIL_PYTHON';

/** The interpreter of the worker and the trainer: `$AGENTMATH_PYTHON`, else `.venv/bin/python`. */
export function trainerPython(environment: NodeJS.ProcessEnv = process.env): string {
  const override = environment[TRAINER_PYTHON_VARIABLE];
  return override !== undefined && override !== '' ? override : `${PROJECT_ROOT}.venv/bin/python`;
}

/** The sandbox's interpreter: `$AGENTMATH_JAIL_PYTHON`, else `.venv-jail/bin/python`. */
export function jailPython(environment: NodeJS.ProcessEnv = process.env): string {
  const override = environment[JAIL_PYTHON_VARIABLE];
  return override !== undefined && override !== '' ? override : `${PROJECT_ROOT}.venv-jail/bin/python`;
}

/**
 * Set in the environment of every model-loading Python process we start (engines, trainer
 * ranks, `model` commands): model folders are local, so the Hugging Face hub is never asked —
 * a missing folder or a hub-style name fails at once instead of after retries over the network.
 */
export const HUB_OFFLINE_ENVIRONMENT = { HF_HUB_OFFLINE: '1' } as const;
