/**
 * `agentmath report DIR [--compare DIR2]`: writes a self-contained report.html for one run
 * folder, or several side by side. Only wires options to `writeRunReport`.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { writeRunReport } from '../../eval/index.ts';
import { answersEquivalent } from '../../grader/index.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { isRlRunFolder, writeRlReport } from '../../train/index.ts';

export function registerReport(program: Command): void {
  program
    .command('report')
    .description(
      'write report.html (tables and inline SVG charts) for an eval or train rl run, optionally beside others',
    )
    .argument('<dir>', 'eval output folder, or a train rl run folder (RL curves)')
    .option('--compare <dirs...>', 'other run folders to show side by side')
    .option('--out <file>', 'where to write the page (default: <dir>/report.html)')
    .action(async (dir: string, options: { compare?: string[]; out?: string }) => {
      const folders = [dir, ...(options.compare ?? [])];
      for (const folder of folders) assertRunFolder(folder);
      const rl = folders.map(isRlRunFolder);
      if (rl.some(Boolean)) {
        const odd = folders.find((_, index) => !rl[index]);
        if (odd !== undefined) {
          throw new AgentMathError(
            'RUN_KIND_MISMATCH',
            `${odd} is not a train rl run (no metrics.jsonl); --compare puts runs of one kind side by side`,
          );
        }
        const path = await writeRlReport(
          folders,
          options.out === undefined ? {} : { outFile: resolve(options.out) },
        );
        process.stdout.write(`${path}\n`);
        return;
      }
      // Majority votes are recomputed only for a run killed before it wrote summary.json.
      const path = await writeRunReport([dir, ...(options.compare ?? [])], {
        equivalent: (left, right) => answersEquivalent(left, right),
        ...(options.out === undefined ? {} : { outFile: resolve(options.out) }),
      });
      process.stdout.write(`${path}\n`);
    });
}

/** A clear error when `folder` is missing or is a file. */
function assertRunFolder(folder: string): void {
  let isFolder: boolean;
  try {
    isFolder = statSync(folder).isDirectory();
  } catch {
    throw new AgentMathError('RUN_NOT_FOUND', `run folder ${folder} does not exist`);
  }
  if (!isFolder)
    throw new AgentMathError('RUN_NOT_FOUND', `${folder} is a file; report needs an eval run folder`);
}
