/**
 * `agentmath quickstart`: the main job on the embedded default (see src/quickstart/quickstart.ts).
 * This file only draws progress and the final table.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { MODEL_QUICKSTART_DEFAULTS } from '../../quickstart/model-quickstart.ts';
import {
  describeRlEffect,
  type QuickstartEvent,
  type QuickstartModelResult,
  type QuickstartStyle,
  runQuickstart,
} from '../../quickstart/quickstart.ts';
import { formatDuration, formatSftEvent } from '../../train/index.ts';
import { integerOption, numberOption } from '../cli-options.ts';
import { holdSignals, interruptSignal } from '../process-lifecycle.ts';
import { createStageProgress, evalStatus, percent } from '../stage-progress.ts';
import { modelQuickstartCommand } from './quickstart-model.ts';
import { formatRlEvent } from './train-rl.ts';

type QuickstartFlags = {
  model?: string;
  out?: string;
  retrain?: boolean;
  count?: number;
  concurrency?: number;
  trainMinutes?: number;
  rlMinutes?: number;
  json?: boolean;
};

const positiveInteger = integerOption({ min: 1 });
/** The embedded model's quickstart defaults of the flags it shares with `--model`. */
const BYTE_DEFAULTS = { concurrency: 32, rlMinutes: 3 } as const;
const positiveNumber = numberOption({ min: 0, minExclusive: true });

export function registerQuickstart(program: Command): void {
  const model = MODEL_QUICKSTART_DEFAULTS;
  program
    .command('quickstart')
    .description(
      'train the embedded models if needed (tool-augmented and text-only SFT, then RL from the tool model), evaluate all on arith, write the report; ' +
        'with --model, a pretrained model through baseline → tool SFT → RL with each stage evaluated',
    )
    .option(
      '--model <name|dir>',
      'a pretrained model instead of the embedded one: a name `model pull` knows (pulled once) or a Hugging Face folder',
    )
    .option(
      '--out <dir>',
      'output folder for the evaluation runs and report.html (default runs/quickstart; with --model runs/quickstart-<model>, which also holds its training runs)',
    )
    .option('--retrain', 'train the models (and RL) again even when checkpoints exist')
    .option(
      '--count <n>',
      `arith benchmark problems to evaluate (default: all 200; with --model the first ${model.count})`,
      positiveInteger,
    )
    .option(
      '--concurrency <n>',
      `trajectories in flight per model (default ${BYTE_DEFAULTS.concurrency}; with --model ${model.concurrency})`,
      positiveInteger,
    )
    .option(
      '--train-minutes <m>',
      `cap on each training run (default: the SFT step count; with --model the tool SFT's budget, default ${model.trainMinutes})`,
      positiveNumber,
    )
    .option(
      '--rl-minutes <m>',
      `minutes of agentic RL from the tool model, 0: no RL (default ${BYTE_DEFAULTS.rlMinutes}; with --model ${model.rlMinutes})`,
      numberOption({ min: 0 }),
    )
    .option('--json', 'print the result as JSON')
    .action(async (flags: QuickstartFlags) => {
      if (flags.model !== undefined) {
        process.exitCode = await modelQuickstartCommand({
          model: flags.model,
          ...(flags.out === undefined ? {} : { out: flags.out }),
          ...(flags.retrain ? { retrain: true } : {}),
          ...(flags.count === undefined ? {} : { count: flags.count }),
          ...(flags.concurrency === undefined ? {} : { concurrency: flags.concurrency }),
          ...(flags.trainMinutes === undefined ? {} : { trainMinutes: flags.trainMinutes }),
          ...(flags.rlMinutes === undefined ? {} : { rlMinutes: flags.rlMinutes }),
          ...(flags.json ? { json: true } : {}),
        });
        return;
      }
      process.exitCode = await quickstartCommand(flags);
    });
}

async function quickstartCommand(flags: QuickstartFlags): Promise<number> {
  // The first TERM/INT/HUP stops gracefully; a second one ends the process at once.
  const release = holdSignals();
  const interrupt = { signal: interruptSignal() };
  const onSignal = () =>
    process.stderr.write(
      '\nstopping: training saves a checkpoint and resumes next time (Ctrl-C again to quit now)\n',
    );
  interrupt.signal.addEventListener('abort', onSignal, { once: true });
  const progress = createQuickstartProgress(process.stderr);
  try {
    const result = await runQuickstart({
      root: process.cwd(),
      outDir: resolve(flags.out ?? 'runs/quickstart'),
      concurrency: flags.concurrency ?? BYTE_DEFAULTS.concurrency,
      signal: interrupt.signal,
      onEvent: progress.onEvent,
      ...(flags.retrain ? { retrain: true } : {}),
      ...(flags.count === undefined ? {} : { benchmarkCount: flags.count }),
      ...(flags.trainMinutes === undefined ? {} : { trainMinutes: flags.trainMinutes }),
      rlMinutes: flags.rlMinutes ?? BYTE_DEFAULTS.rlMinutes,
    });
    progress.finish();
    if (flags.json) {
      process.stdout.write(
        `${JSON.stringify(
          {
            wallMs: result.wallMs,
            reportPath: result.reportPath,
            rlEffect: result.rlEffect,
            models: result.models.map(({ summary, training, ...model }) => ({
              ...model,
              accuracy: summary.avgAtK,
              codeCallsPerTrajectory: summary.toolUse.codeCallsPerTrajectory,
              meanResponseLength: summary.length.mean,
              trainingWallMs: training.training.wallMs,
            })),
          },
          null,
          2,
        )}\n`,
      );
    } else {
      process.stdout.write(`\n${renderQuickstartTable(result.models)}\n`);
      if (result.rlEffect !== null) process.stdout.write(`${describeRlEffect(result.rlEffect)}\n`);
      process.stdout.write(
        `report: ${result.reportPath}\nruns:   ${result.models.map((model) => model.runDir).join('  ')}\n` +
          `took ${formatDuration(result.wallMs)}\n`,
      );
    }
    return 0;
  } catch (error) {
    progress.finish();
    if (interrupt.signal.aborted) {
      process.stderr.write(
        'quickstart interrupted; run `agentmath quickstart` again to continue where it stopped\n',
      );
      return 130;
    }
    throw error;
  } finally {
    interrupt.signal.removeEventListener('abort', onSignal);
    release();
  }
}

const MODEL_LABELS: Record<QuickstartStyle, string> = {
  tool: 'SFT with tools',
  text: 'SFT text-only',
  'tool-rl': 'SFT with tools + RL',
};

/** The comparison table: accuracy overall and by level, tool use, response length. */
export function renderQuickstartTable(models: readonly QuickstartModelResult[]): string {
  const levels = [...new Set(models.flatMap((model) => model.levels.map((entry) => entry.level)))].sort(
    (left, right) => left - right,
  );
  const header = [
    'model',
    'accuracy',
    ...levels.map((level) => `level ${level}`),
    'code/traj',
    'tokens/traj',
  ];
  const rows = models.map((model) => [
    MODEL_LABELS[model.style],
    percent(model.summary.avgAtK),
    ...levels.map((level) => {
      const entry = model.levels.find((candidate) => candidate.level === level);
      return entry === undefined ? '–' : percent(entry.accuracy);
    }),
    model.summary.toolUse.codeCallsPerTrajectory.toFixed(2),
    model.summary.length.mean.toFixed(0),
  ]);
  const widths = header.map((cell, column) =>
    Math.max(cell.length, ...rows.map((row) => row[column]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(' | ')} |`;
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

/** Progress of the models: one redrawn status line on a terminal, plain lines otherwise. */
function createQuickstartProgress(stream: NodeJS.WriteStream): {
  onEvent: (event: QuickstartEvent) => void;
  finish: () => void;
} {
  const progress = createStageProgress(stream);
  const onEvent = (event: QuickstartEvent) => {
    switch (event.type) {
      case 'model-cached':
        progress.log(event.style, `using the trained model in ${event.dir}`);
        return;
      case 'rl-cached':
        progress.log('tool-rl', `using the RL run in ${event.dir}`);
        return;
      case 'rl-event':
        for (const line of formatRlEvent(event.event).split('\n')) {
          if (line !== '' && !line.startsWith('config:')) progress.log('tool-rl', line);
        }
        return;
      case 'sft-event': {
        const sft = event.event;
        if (sft.type === 'train-step') {
          progress.status(
            event.style,
            `training ${sft.step}/${sft.totalSteps} loss ${sft.loss.toFixed(3)} ` +
              `${Math.round(sft.tokensPerSecond)} tok/s ETA ${formatDuration(sft.etaMs)}`,
            sft.step,
            sft.totalSteps,
          );
        } else if (sft.type === 'sft-start') {
          progress.log(
            event.style,
            sft.resumedFromStep === null
              ? `training from scratch in ${sft.dir}`
              : `resuming training at step ${sft.resumedFromStep}`,
          );
        } else if (sft.type === 'sft-finish') {
          progress.log(
            event.style,
            `trained: ${sft.report.training.steps} steps in ${formatDuration(sft.report.training.wallMs)}`,
          );
        } else if (sft.type === 'data-ready' || sft.type === 'sft-interrupted') {
          const line = formatSftEvent(sft);
          if (line !== null) progress.log(event.style, line);
        }
        return;
      }
      case 'eval-start':
        progress.clear(event.style);
        progress.log(event.style, `evaluating on ${event.problems} arith problems → ${event.outDir}`);
        return;
      case 'eval-progress':
        progress.status(event.style, evalStatus(event.progress), event.progress.done, event.progress.total);
        return;
      case 'eval-finish':
        progress.clear(event.style);
        progress.log(
          event.style,
          `accuracy ${percent(event.summary.avgAtK)} on ${event.summary.problems} problems`,
        );
        return;
    }
  };
  return { onEvent, finish: progress.finish };
}
