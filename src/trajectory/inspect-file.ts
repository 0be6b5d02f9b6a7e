/**
 * Prints the trajectories of a JSONL file for a person to read, one after another as they
 * stream from disk, or only the one at a given index. A file still being written (its last
 * line cut off) is read up to that line, with a warning.
 */
import { AgentMathError } from '../shared/agentmath-error.ts';
import { renderTrajectory } from './render-trajectory.ts';
import { readTrajectories } from './trajectory-jsonl.ts';

export type InspectOptions = {
  /** Only the trajectory at this 0-based position in the file. */
  index?: number;
  color: boolean;
  write: (text: string) => void;
  onWarning: (message: string) => void;
};

/** Renders the file's trajectories through `write`; returns how many were printed. */
export async function inspectTrajectoryFile(file: string, options: InspectOptions): Promise<number> {
  const { index, color, write, onWarning } = options;
  let position = 0;
  let printed = 0;
  for await (const trajectory of readTrajectories(file, { tolerateTruncatedLastLine: true, onWarning })) {
    if (index === undefined || index === position) {
      write(`${printed > 0 ? '\n' : ''}${renderTrajectory(trajectory, { color })}`);
      printed++;
      if (index !== undefined) return printed;
    }
    position++;
  }
  if (index !== undefined) {
    throw new AgentMathError(
      'INDEX_OUT_OF_RANGE',
      `${file} holds ${position} ${position === 1 ? 'trajectory' : 'trajectories'}; --index ${index} is out of range (0..${position - 1})`,
    );
  }
  return printed;
}
