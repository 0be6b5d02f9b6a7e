/**
 * `agentmath report DIR [--compare DIR2]`: writes a self-contained report.html for one run
 * folder, or several side by side. Only wires options to `writeRunReport`.
 */
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { evalComparisonTable, readEvalRunFigures, writeRunReport } from '../../eval/index.ts';
import { answersEquivalent } from '../../grader/index.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { isRlRunFolder, readRlRun, rlSummaryTables, writeRlReport } from '../../train/index.ts';
import { numberOption, usageError } from '../cli-options.ts';

export function registerReport(program: Command): void {
  program
    .command('report')
    .description(
      'write report.html (tables and inline SVG charts) for an eval or train rl run, optionally beside others',
    )
    .argument('<dir>', 'eval output folder, or a train rl run folder (RL curves)')
    .option('--compare <dirs...>', 'other run folders to show side by side')
    .option('--out <file>', 'where to write the page (default: <dir>/report.html)')
    .option(
      '--table',
      'print Markdown tables instead of writing the page: train rl runs, their figures (held-out accuracy per evaluation, rollout halves, correlations with the step); eval runs, accuracy and code use of each and the paired difference of every --compare run against DIR',
    )
    .option(
      '--target <accuracy>',
      'with --table: also give the first evaluated step whose held-out accuracy reaches this fraction',
      numberOption({ min: 0, max: 1 }),
    )
    .action(
      async (
        dir: string,
        options: { compare?: string[]; out?: string; table?: boolean; target?: number },
      ) => {
        if (options.out !== undefined && existsSync(options.out) && statSync(options.out).isDirectory())
          throw usageError(
            `--out ${options.out} is a folder; give the page's file name, e.g. ${join(options.out, 'report.html')}`,
          );
        const folders = [dir, ...(options.compare ?? [])];
        for (const folder of folders) {
          assertRunFolder(folder);
          const otherKind = isRlRunFolder(folder) ? null : runKindOf(folder);
          if (options.table && otherKind !== null)
            throw usageError(`--table reads train rl runs or eval runs; ${folder} is ${otherKind}`);
          assertReadableKind(folder);
        }
        const rl = folders.map(isRlRunFolder);
        if (rl.some(Boolean)) {
          const odd = folders.find((_, index) => !rl[index]);
          if (odd !== undefined) {
            throw new AgentMathError(
              'RUN_KIND_MISMATCH',
              `${odd} is not a train rl run (no metrics.jsonl); --compare puts runs of one kind side by side`,
            );
          }
          if (options.target !== undefined && !options.table)
            throw usageError(
              '--target goes with --table (the first evaluated step reaching it is a table column)',
            );
          if (options.table && options.out !== undefined)
            throw usageError(
              '--table prints to standard output; --out names the page, which --table does not write',
            );
          if (options.table) {
            const runs = await Promise.all(folders.map((folder) => readRlRun(folder)));
            process.stdout.write(
              `${rlSummaryTables(runs, options.target === undefined ? {} : { target: options.target })}\n`,
            );
            return;
          }
          const path = await writeRlReport(
            folders,
            options.out === undefined ? {} : { outFile: resolve(options.out) },
          );
          process.stdout.write(`${path}\n`);
          return;
        }
        if (options.target !== undefined)
          throw usageError('--target reads train rl runs (folders with metrics.jsonl)');
        if (options.table) {
          if (options.out !== undefined)
            throw usageError(
              '--table prints to standard output; --out names the page, which --table does not write',
            );
          const runs = await Promise.all(folders.map((folder) => readEvalRunFigures(folder)));
          process.stdout.write(`${evalComparisonTable(runs)}\n`);
          return;
        }
        // Majority votes are recomputed only for a run killed before it wrote summary.json.
        const path = await writeRunReport([dir, ...(options.compare ?? [])], {
          equivalent: (left, right) => answersEquivalent(left, right),
          ...(options.out === undefined ? {} : { outFile: resolve(options.out) }),
        });
        process.stdout.write(`${path}\n`);
      },
    );
}

/** What `report` reads, for messages. */
const READS =
  'report reads eval runs (`agentmath eval --out`) and train rl runs (`agentmath train rl --out`)';

/** The kind of a run folder that `report` does not read (a rollout, synthesis or SFT run), or null. */
function runKindOf(folder: string): string | null {
  if (existsSync(join(folder, 'synth-run.json'))) return 'an `agentmath synth run` folder';
  if (existsSync(join(folder, 'groups.jsonl')) || existsSync(join(folder, 'steps.jsonl')))
    return 'an `agentmath rollout` run';
  if (existsSync(join(folder, 'sft-state.json')) || existsSync(join(folder, 'metrics.jsonl')))
    return 'an `agentmath train sft` run';
  return null;
}

/**
 * A clear error for a folder `report` does not read: a run of another kind (a rollout, synthesis
 * or SFT run), or no run at all (neither an eval run's summary.json or trajectories.jsonl nor a
 * train rl run's metrics) — never a table row of zeros.
 */
function assertReadableKind(folder: string): void {
  if (isRlRunFolder(folder)) return;
  const kind = runKindOf(folder);
  if (kind !== null)
    throw new AgentMathError(
      'RUN_KIND_UNSUPPORTED',
      `${folder} is ${kind}; ${READS}. \`agentmath inspect ${join(folder, 'trajectories.jsonl')}\` shows its trajectories`,
    );
  if (!['summary.json', 'trajectories.jsonl'].some((name) => existsSync(join(folder, name))))
    throw new AgentMathError(
      'EVAL_RUN_FORMAT',
      `${folder} holds neither summary.json nor trajectories.jsonl: not a run; ${READS}`,
    );
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
