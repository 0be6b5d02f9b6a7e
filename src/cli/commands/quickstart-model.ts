/**
 * `agentmath quickstart --model NAME|DIR`: the quickstart on a pretrained model (see
 * src/quickstart/model-quickstart.ts). This file reads the flags, draws progress, and prints
 * the table, each stage's effect and each stage's wall time.
 */
import { resolve } from 'node:path';
import {
  MODEL_QUICKSTART_DEFAULTS,
  type ModelQuickstartEvent,
  type ModelQuickstartOptions,
  type ModelQuickstartResult,
  quickstartModelLabel,
  resolveQuickstartModel,
  runModelQuickstart,
} from '../../quickstart/model-quickstart.ts';
import { formatDuration } from '../../train/index.ts';
import { usageError } from '../cli-options.ts';
import { holdSignals, interruptSignal } from '../process-lifecycle.ts';
import { createStageProgress, evalStatus, percent } from '../stage-progress.ts';
import { formatRlEvent } from './train-rl.ts';
import { formatHfSftEvent } from './train-sft-model.ts';

export type ModelQuickstartFlags = {
  model: string;
  out?: string;
  retrain?: boolean;
  count?: number;
  /** undefined: the model quickstart's default (the byte quickstart's commander default is not taken). */
  concurrency?: number;
  trainMinutes?: number;
  rlMinutes?: number;
  json?: boolean;
};

/** The run's options from the flags; a model that is neither a known name nor a Hugging Face folder is a usage error. */
export function modelQuickstartOptions(
  flags: ModelQuickstartFlags,
  root: string,
): Omit<ModelQuickstartOptions, 'signal' | 'onEvent'> {
  const choice = resolveQuickstartModel(flags.model);
  if (choice.type === 'refused') throw usageError(choice.message);
  return {
    model: choice,
    root,
    outDir: resolve(flags.out ?? `runs/quickstart-${quickstartModelLabel(choice)}`),
    count: flags.count ?? MODEL_QUICKSTART_DEFAULTS.count,
    concurrency: flags.concurrency ?? MODEL_QUICKSTART_DEFAULTS.concurrency,
    trainMinutes: flags.trainMinutes ?? MODEL_QUICKSTART_DEFAULTS.trainMinutes,
    rlMinutes: flags.rlMinutes ?? MODEL_QUICKSTART_DEFAULTS.rlMinutes,
    ...(flags.retrain ? { retrain: true } : {}),
  };
}

export async function modelQuickstartCommand(flags: ModelQuickstartFlags): Promise<number> {
  const options = modelQuickstartOptions(flags, process.cwd());
  // The first TERM/INT/HUP stops gracefully; a second one ends the process at once.
  const release = holdSignals();
  const signal = interruptSignal();
  const onSignal = () =>
    process.stderr.write(
      '\nstopping: a training saves a checkpoint and resumes next time (Ctrl-C again to quit now)\n',
    );
  signal.addEventListener('abort', onSignal, { once: true });
  const progress = createModelQuickstartProgress(process.stderr);
  try {
    const result = await runModelQuickstart({ ...options, signal, onEvent: progress.onEvent });
    progress.finish();
    process.stdout.write(
      flags.json ? `${JSON.stringify(jsonResult(result), null, 2)}\n` : renderModelQuickstart(result),
    );
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

function jsonResult(result: ModelQuickstartResult): Record<string, unknown> {
  return {
    ...result,
    evaluations: result.evaluations.map(({ summary, ...evaluation }) => ({
      ...evaluation,
      problems: summary.problems,
      accuracy: summary.avgAtK,
      codeCallsPerTrajectory: summary.toolUse.codeCallsPerTrajectory,
      meanResponseLength: summary.length.mean,
    })),
  };
}

const MODEL_LABELS = { baseline: 'base model', sft: 'tool SFT', rl: 'tool SFT + RL' } as const;

/** The table of the three models, each stage's effect, each stage's time. */
export function renderModelQuickstart(result: ModelQuickstartResult): string {
  const table = renderTable(
    ['model', 'accuracy', 'code/traj', 'tokens/traj'],
    result.evaluations.map(({ model, summary }) => [
      MODEL_LABELS[model],
      percent(summary.avgAtK),
      summary.toolUse.codeCallsPerTrajectory.toFixed(2),
      summary.length.mean.toFixed(0),
    ]),
  );
  const timings = renderTable(
    ['stage', 'this run', 'wall time'],
    result.stages.map((stage) => [
      stage.stage,
      stage.status,
      stage.status === 'reused'
        ? stage.recordedWallMs === null
          ? '–'
          : `${formatDuration(stage.recordedWallMs)} (when it ran)`
        : formatDuration(stage.wallMs),
    ]),
  );
  return (
    `\n${result.label} on ${result.evaluations[0]?.summary.problems ?? 0} held-out arith problems ` +
    `(markdown tool prompt, greedy):\n${table}\n\n` +
    result.effects.map(({ sentence }) => `${sentence}\n`).join('') +
    `\n${timings}\n` +
    `report: ${result.reportPath}\nresult: ${result.resultPath}\ntook ${formatDuration(result.wallMs)}\n`
  );
}

function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((cell, column) =>
    Math.max(cell.length, ...rows.map((row) => row[column]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(' | ')} |`;
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

/** Progress of the stages: a line for each step, the running stage's status redrawn on a terminal. */
function createModelQuickstartProgress(stream: NodeJS.WriteStream): {
  onEvent: (event: ModelQuickstartEvent) => void;
  finish: () => void;
} {
  const progress = createStageProgress(stream);
  const onEvent = (event: ModelQuickstartEvent) => {
    switch (event.type) {
      case 'model-ready':
        progress.log(
          'model',
          event.how === 'pulled'
            ? `pulled → ${event.dir} (${formatDuration(event.wallMs)})`
            : event.how === 'cached'
              ? `already pulled: ${event.dir}`
              : event.dir,
        );
        return;
      case 'stage-start':
        progress.log(event.stage, `${event.resumed ? 'resuming' : 'starting'} → ${event.dir}`);
        return;
      case 'stage-reused':
        progress.log(event.stage, `done before (${formatDuration(event.wallMs)}): ${event.dir}`);
        return;
      case 'stage-finish':
        progress.clear(event.stage);
        progress.log(event.stage, `finished in ${formatDuration(event.wallMs)}`);
        return;
      case 'data-progress': {
        const { resumed, written, skipped, total } = event.progress;
        const done = resumed + written + skipped;
        progress.status('data', `${done}/${total} tool solutions`, done, total);
        return;
      }
      case 'sft-event': {
        const line = formatHfSftEvent(event.event);
        if (line === null) return;
        if (event.event.type === 'train-step') {
          progress.status('sft', line, event.event.step, event.event.totalSteps);
        } else progress.log('sft', line);
        return;
      }
      case 'rl-event':
        for (const line of formatRlEvent(event.event).split('\n')) {
          if (line !== '' && !line.startsWith('config:')) progress.log('rl', line);
        }
        return;
      case 'rl-log':
        progress.log('rl', event.line);
        return;
      case 'eval-progress':
        progress.status(
          `eval-${event.model}`,
          evalStatus(event.progress),
          event.progress.done,
          event.progress.total,
        );
        return;
    }
  };
  return { onEvent, finish: progress.finish };
}
