import { type Command, InvalidArgumentError } from 'commander';
import { inspectTrajectoryFile } from '../../trajectory/inspect-file.ts';
import { shouldUseColor } from '../../trajectory/render-trajectory.ts';

export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description('print the trajectories of a JSONL file readably (colours on a terminal; NO_COLOR honoured)')
    .argument('<file>', 'trajectory JSONL file')
    .option('--index <n>', 'print only the trajectory at this 0-based position', parseIndex)
    .option('--color', 'colour the output even when it is not a terminal')
    .action(async (file: string, options: { index?: number; color?: boolean }) => {
      await inspectTrajectoryFile(file, {
        ...(options.index === undefined ? {} : { index: options.index }),
        color: options.color === true || shouldUseColor(process.stdout),
        write: (text) => process.stdout.write(text),
        onWarning: (message) => process.stderr.write(`agentmath: warning: ${message}\n`),
      });
    });
}

function parseIndex(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected a nonnegative integer');
  return Number(value);
}
