/**
 * Reading a run's saved configuration (`config.json`, `synth-run.json`) on `--resume`: a file
 * that is not valid JSON (cut by a full disk, edited by hand) is an error with code
 * `RUN_CONFIG_INVALID` that names the file and says what to do, never a bare JSON.parse
 * message. A missing file is the caller's business (it checks whether a run is there first).
 */
import { readFile } from 'node:fs/promises';
import { AgentMathError } from './agentmath-error.ts';
import { stripBom } from './text-input.ts';

/** The code of a saved run configuration that cannot be read. */
export const RUN_CONFIG_INVALID = 'RUN_CONFIG_INVALID';

/** The parsed contents of a run's saved configuration file; throws `RUN_CONFIG_INVALID` if it is not JSON. */
export async function readRunConfigFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new AgentMathError(
      RUN_CONFIG_INVALID,
      `${path}: cannot read the run's saved configuration (${(error as Error).message})`,
      {
        cause: error,
      },
    );
  }
  try {
    return JSON.parse(stripBom(text));
  } catch (error) {
    throw new AgentMathError(
      RUN_CONFIG_INVALID,
      `${path}: the run's saved configuration is not valid JSON (${(error as Error).message}); ` +
        'restore the file, or start a new run with another --out (without --resume)',
      { cause: error },
    );
  }
}
