/**
 * `agentmath quickstart [--model NAME|DIR]`: the main job (src/quickstart/quickstart.ts) on the
 * embedded byte model, or on a pretrained model. This file reads the flags, draws progress, and
 * prints the table, each stage's effect and the time it took.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import {
  EMBEDDED_RL_MINUTES,
  embeddedPlan,
  expectedQuickstartTime,
  MEASURED_QUICKSTART_TIMES,
  PRETRAINED_DEFAULTS,
  pretrainedPlan,
  QUICKSTART_MODEL_LABELS,
  type QuickstartEvaluation,
  type QuickstartEvent,
  type QuickstartPlan,
  type QuickstartResult,
  quickstartModelLabel,
  resolveQuickstartModel,
  runQuickstart,
} from '../../quickstart/index.ts';
import { formatDuration } from '../../train/index.ts';
import { integerOption, numberOption, usageError } from '../cli-options.ts';
import { holdSignals, interruptSignal } from '../process-lifecycle.ts';
import { createStageProgress, evalStatus, percent } from '../stage-progress.ts';
import { formatRlEvent } from './train-rl.ts';

type QuickstartFlags = {
  model?: string;
  out?: string;
  retrain?: boolean;
  count?: number;
  concurrency?: number;
  trainMinutes?: number;
  rlMinutes?: number;
  rlSeed?: number;
  json?: boolean;
};

const positiveInteger = integerOption({ min: 1 });
const positiveNumber = numberOption({ min: 0, minExclusive: true });

export function registerQuickstart(program: Command): void {
  const pretrained = PRETRAINED_DEFAULTS;
  program
    .command('quickstart')
    .description(
      'the main job: a model through tool SFT (and text SFT, the baseline arm) and RL where SFT left room, each evaluated on held-out arith, ' +
        'with each stage’s effect and report.html; the embedded byte model by default, a pretrained one with --model',
    )
    .option(
      '--model <name|dir>',
      'a pretrained model instead of the embedded one: a name `model pull` knows (pulled once) or a Hugging Face folder',
    )
    .option(
      '--out <dir>',
      'output folder for the evaluation runs and report.html (default runs/quickstart; with --model runs/quickstart-<model>, which also holds its training runs)',
    )
    .option('--retrain', 'train and evaluate every stage again even when finished runs exist')
    .option(
      '--count <n>',
      `held-out arith problems to evaluate (default: all 200; with --model the first ${pretrained.count}, and as many of the held-out level-5 split)`,
      positiveInteger,
    )
    .option(
      '--concurrency <n>',
      `trajectories in flight per model (default 32; with --model ${pretrained.concurrency})`,
      positiveInteger,
    )
    .option(
      '--train-minutes <m>',
      `cap on each SFT run (default: its step count; with --model ${pretrained.trainMinutes})`,
      positiveNumber,
    )
    .option(
      '--rl-minutes <m>',
      `minutes of agentic RL from the tool model, 0: no RL (default ${EMBEDDED_RL_MINUTES}; with --model ${pretrained.rlMinutes})`,
      numberOption({ min: 0 }),
    )
    .option(
      '--rl-seed <n>',
      "the RL stage's seed (its problem draws and sampling; default 0); another seed trains its own RL model (arith-tool-rl-seed-N) from the same SFT models",
      integerOption({ min: 0 }),
    )
    .option('--json', 'print the result as JSON')
    .action(async (flags: QuickstartFlags) => {
      process.exitCode = await quickstartCommand(flags);
    });
}

/** The plan and output folder the flags ask for; a `--model` that is no model is a usage error. */
export function quickstartPlanOf(
  flags: QuickstartFlags,
  root: string,
): { plan: QuickstartPlan; outDir: string } {
  const sizes = {
    ...(flags.count === undefined ? {} : { count: flags.count }),
    ...(flags.concurrency === undefined ? {} : { concurrency: flags.concurrency }),
    ...(flags.trainMinutes === undefined ? {} : { trainMinutes: flags.trainMinutes }),
    ...(flags.rlMinutes === undefined ? {} : { rlMinutes: flags.rlMinutes }),
    ...(flags.rlSeed === undefined ? {} : { rlSeed: flags.rlSeed }),
  };
  if (flags.model === undefined) {
    return { plan: embeddedPlan(root, sizes), outDir: resolve(flags.out ?? 'runs/quickstart') };
  }
  const source = resolveQuickstartModel(flags.model);
  if (source.type === 'refused') throw usageError(source.message);
  const outDir = resolve(flags.out ?? `runs/quickstart-${quickstartModelLabel(source)}`);
  return { plan: pretrainedPlan(source, outDir, sizes), outDir };
}

async function quickstartCommand(flags: QuickstartFlags): Promise<number> {
  const { plan, outDir } = quickstartPlanOf(flags, process.cwd());
  // The first TERM/INT/HUP stops gracefully; a second one ends the process at once.
  const release = holdSignals();
  const signal = interruptSignal();
  const onSignal = () =>
    process.stderr.write(
      '\nstopping: training saves a checkpoint and resumes next time (Ctrl-C again to quit now)\n',
    );
  signal.addEventListener('abort', onSignal, { once: true });
  const expected = expectedQuickstartTime(plan);
  process.stderr.write(
    `expected: about ${Math.round(expected.minutes)} min on ${MEASURED_QUICKSTART_TIMES.where} (${expected.parts}); ` +
      'less where a finished run is reused\n',
  );
  const progress = createQuickstartProgress(process.stderr);
  try {
    const result = await runQuickstart({
      plan,
      root: process.cwd(),
      outDir,
      signal,
      onEvent: progress.onEvent,
      ...(flags.retrain ? { retrain: true } : {}),
    });
    progress.finish();
    if (flags.json) {
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    } else {
      process.stdout.write(`\n${renderQuickstartTable(result.evaluations)}\n`);
      if (result.rlSplit.length > 0) process.stdout.write(`\n${renderQuickstartTable(result.rlSplit)}\n`);
      for (const effect of result.effects) process.stdout.write(`${effect.sentence}\n`);
      process.stdout.write(
        `report: ${result.reportPath}\nruns:   ${[...result.evaluations, ...result.rlSplit].map((entry) => entry.runDir).join('  ')}\n` +
          `${renderStageTimes(result)}\ntook ${formatDuration(result.wallMs)}\n`,
      );
    }
    return 0;
  } catch (error) {
    progress.finish();
    if (signal.aborted) {
      process.stderr.write(
        'quickstart interrupted; run the same command again to continue where it stopped\n',
      );
      return 130;
    }
    throw error;
  } finally {
    signal.removeEventListener('abort', onSignal);
    release();
  }
}

/** The comparison table: accuracy overall and by level, tool use, response length. */
export function renderQuickstartTable(evaluations: readonly QuickstartEvaluation[]): string {
  const levels = [...new Set(evaluations.flatMap((entry) => entry.levels.map((level) => level.level)))].sort(
    (left, right) => left - right,
  );
  const header = [
    'model',
    'accuracy',
    ...levels.map((level) => `level ${level}`),
    'code/traj',
    'tokens/traj',
  ];
  const rows = evaluations.map((entry) => [
    QUICKSTART_MODEL_LABELS[entry.model],
    percent(entry.summary.avgAtK),
    ...levels.map((level) => {
      const found = entry.levels.find((candidate) => candidate.level === level);
      return found === undefined ? '–' : percent(found.accuracy);
    }),
    entry.summary.toolUse.codeCallsPerTrajectory.toFixed(2),
    entry.summary.length.mean.toFixed(0),
  ]);
  const widths = header.map((cell, column) =>
    Math.max(cell.length, ...rows.map((row) => row[column]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(' | ')} |`;
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

/** `stages: sft-tool 4m01s, sft-text 5m40s, rl reused (3m50s), …`. */
function renderStageTimes(result: QuickstartResult): string {
  const parts = result.stages
    .filter((stage) => stage.stage !== 'model' || stage.status !== 'reused')
    .map((stage) =>
      stage.status === 'reused'
        ? `${stage.stage} reused${stage.recordedWallMs === null ? '' : ` (${formatDuration(stage.recordedWallMs)})`}`
        : `${stage.stage} ${formatDuration(stage.wallMs)}`,
    );
  return `stages: ${parts.join(', ')}`;
}

/** Progress of the stages: one redrawn status line on a terminal, plain lines otherwise. */
function createQuickstartProgress(stream: NodeJS.WriteStream): {
  onEvent: (event: QuickstartEvent) => void;
  finish: () => void;
} {
  const progress = createStageProgress(stream);
  const onEvent = (event: QuickstartEvent) => {
    switch (event.type) {
      case 'stage':
        if (event.status === 'finish' && event.stage.startsWith('eval-')) return;
        progress.log(
          event.stage,
          `${event.status === 'reused' ? 'reusing' : event.status === 'resume' ? 'resuming' : event.status === 'start' ? 'starting' : 'finished'}${event.detail === undefined ? '' : `: ${event.detail}`}`,
        );
        return;
      case 'rl-event':
        for (const line of formatRlEvent(event.event).split('\n')) {
          if (line !== '' && !line.startsWith('config:')) progress.log('rl', line);
        }
        return;
      case 'rl-log':
        progress.log('rl', event.line);
        return;
      case 'sft-event': {
        const sft = event.event;
        const label = `sft-${event.arm}`;
        if (sft.type === 'train-step') {
          progress.status(
            label,
            `training ${sft.step}/${sft.totalSteps} loss ${sft.loss?.toFixed(3) ?? 'not finite'} ${Math.round(sft.tokensTotalPerSecond)} tok/s ETA ${formatDuration(sft.etaMs)}`,
            sft.step,
            sft.totalSteps,
          );
        } else if (sft.type === 'data-ready') {
          progress.log(
            label,
            `data: ${sft.examples} examples (mean ${Math.round(sft.meanTokens)} tokens), ${sft.droppedTooLong} longer than the context left out`,
          );
        } else if (sft.type === 'model-exported') {
          progress.clear(label);
          progress.log(label, `trained → ${sft.path}`);
        }
        return;
      }
      case 'eval-progress':
        progress.status(
          event.evaluation,
          evalStatus(event.progress),
          event.progress.done,
          event.progress.total,
        );
        return;
      case 'eval-finish':
        progress.clear(event.evaluation);
        progress.log(
          event.evaluation,
          `accuracy ${percent(event.summary.avgAtK)} on ${event.summary.problems} problems`,
        );
        return;
    }
  };
  return { onEvent, finish: progress.finish };
}
