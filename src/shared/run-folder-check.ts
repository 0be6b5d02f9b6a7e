/**
 * What a job may do with the folder it is told to write (`--out`), checked before anything is
 * started or written: a file is refused; a folder that holds files but not the job's own run
 * (no marker file such as `config.json`) is refused, naming a file, so nothing in it is ever
 * truncated; `--resume` needs the marker; a run without `--resume` is not started over.
 * Refusals carry code `RUN_FOLDER_REFUSED` (the CLI exits 2: the command line named the
 * wrong folder). The run identity (`run-identity.ts`) and the lock (`run-folder-lock.ts`)
 * come after this check.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AgentMathError } from './agentmath-error.ts';
import { RUN_LOCK_FILE } from './run-folder-lock.ts';

/** The code of a refused output folder (the CLI exits with status 2). */
export const RUN_FOLDER_REFUSED = 'RUN_FOLDER_REFUSED';

function refuse(message: string): AgentMathError {
  return new AgentMathError(RUN_FOLDER_REFUSED, message);
}

/** Refuses an output path that exists and is not a folder. */
export function assertNotAFile(path: string, option = '--out'): void {
  if (existsSync(path) && !statSync(path).isDirectory())
    throw refuse(`${option} ${path} is a file; give a folder for the run (a new or empty one)`);
}

/**
 * Whether `folder` holds a run of this job (`marker` exists): false for a missing or empty
 * folder. Throws when the folder holds other files, when `resume` is asked without a run, or
 * when a run is there and `resume` is not.
 */
export function checkRunFolder(options: {
  folder: string;
  /** The file that makes a folder this job's run (`config.json`, `synth-run.json`). */
  marker: string;
  resume: boolean;
  /** The job, for messages: `rollout`, `synth run`. */
  command: string;
  /** Names the job may leave before its marker exists (a start that failed): not someone else's. */
  leftovers?: readonly string[];
}): boolean {
  const { folder, marker, resume, command, leftovers = [] } = options;
  assertNotAFile(folder);
  const entries = existsSync(folder)
    ? readdirSync(folder).filter((name) => name !== RUN_LOCK_FILE && !name.endsWith('.tmp'))
    : [];
  const isRun = entries.includes(marker);
  const foreign = entries.filter((name) => !leftovers.includes(name));
  if (!isRun && foreign.length > 0) {
    const shown = foreign.sort().slice(0, 3).join(', ');
    throw refuse(
      `${folder} holds files that \`agentmath ${command}\` did not write (${shown}${foreign.length > 3 ? ', …' : ''}; no ${marker}): ` +
        'nothing was changed; pass a new or empty folder as --out',
    );
  }
  if (!isRun && resume)
    throw refuse(
      `${join(folder, marker)} does not exist: there is no \`agentmath ${command}\` run to resume there; drop --resume to start one`,
    );
  if (isRun && !resume)
    throw refuse(
      `${folder} already holds an \`agentmath ${command}\` run: pass --resume to continue it, or another --out`,
    );
  return isRun;
}
