import type { Command } from 'commander';
import { inspectTrajectoryFile } from '../../trajectory/inspect-file.ts';
import { shouldUseColor } from '../../trajectory/render-trajectory.ts';
import { integerOption } from '../cli-options.ts';

export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description('print the trajectories of a JSONL file readably (colours on a terminal; NO_COLOR honoured)')
    .argument('<file>', 'trajectory JSONL file (- for standard input)')
    .option('--index <n>', 'print only the trajectory at this 0-based position', integerOption())
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
