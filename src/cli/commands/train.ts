/**
 * `agentmath train sft`: trains the embedded model on a task family and writes its training
 * report; `agentmath train compare`: the tool model and the text-only baseline side by side.
 * Progress goes to stderr (a bar redrawn in place on a terminal, periodic lines otherwise);
 * the report goes to stdout.
 */
import type { Command } from 'commander';
import { embeddedModelPaths } from '../../engine/embedded/index.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import {
  formatSftEvent,
  formatStepBar,
  readTrainingReport,
  renderComparison,
  renderTrainingReport,
  runSft,
  type SftConfigInput,
  type SftEvent,
} from '../../train/index.ts';

type SftFlags = {
  task: string;
  textOnly?: boolean;
  steps?: string;
  batchSize?: string;
  learningRate?: string;
  warmupSteps?: string;
  minutes?: string;
  problems?: string;
  levels?: string;
  seed?: string;
  model?: string;
  threads?: string;
  evalProblems?: string;
  checkpointEvery?: string;
  out?: string;
  resume?: boolean;
  json?: boolean;
  data?: string;
  unmasked?: boolean;
};

/** Plain-line interval when stderr is not a terminal. */
const LOG_EVERY_MS = 10_000;

function numberFlag(name: string, value: string | undefined, integer: boolean): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (
    value.trim() === '' ||
    !Number.isFinite(parsed) ||
    parsed < 0 ||
    (integer && !Number.isInteger(parsed))
  ) {
    throw new AgentMathError(
      'CLI_BAD_OPTION',
      `--${name} must be ${integer ? 'a whole number' : 'a number'} >= 0 (got "${value}")`,
    );
  }
  return parsed;
}

function configFrom(flags: SftFlags): SftConfigInput {
  if (flags.task !== 'arith') {
    throw new AgentMathError('CLI_BAD_OPTION', `--task: only "arith" is available (got "${flags.task}")`);
  }
  const levels =
    flags.levels === undefined
      ? undefined
      : flags.levels.split(',').map((level) => numberFlag('levels', level, true) as number);
  const entries: Array<[keyof SftConfigInput, number | number[] | string | undefined]> = [
    ['steps', numberFlag('steps', flags.steps, true)],
    ['batchSize', numberFlag('batch-size', flags.batchSize, true)],
    ['learningRate', numberFlag('learning-rate', flags.learningRate, false)],
    ['warmupSteps', numberFlag('warmup-steps', flags.warmupSteps, true)],
    ['maxMinutes', numberFlag('minutes', flags.minutes, false)],
    ['trainProblems', numberFlag('problems', flags.problems, true)],
    ['seed', numberFlag('seed', flags.seed, true)],
    ['trainThreads', numberFlag('threads', flags.threads, true)],
    ['evalProblems', numberFlag('eval-problems', flags.evalProblems, true)],
    ['checkpointEvery', numberFlag('checkpoint-every', flags.checkpointEvery, true)],
    ['levels', levels],
    ['model', flags.model],
    ['dataFile', flags.data],
  ];
  return {
    task: 'arith',
    style: flags.textOnly ? 'text' : 'tool',
    ...(flags.unmasked ? { maskToolOutput: false } : {}),
    ...Object.fromEntries(entries.filter(([, value]) => value !== undefined)),
  };
}

/** Writes progress to stderr: the bar in place on a terminal, a line every 10 s otherwise. */
function progressWriter(): { onEvent: (event: SftEvent) => void; end: () => void } {
  const tty = process.stderr.isTTY === true;
  let lastLine = 0;
  let barShown = false;
  const clearBar = () => {
    if (barShown) process.stderr.write('\r\x1b[2K');
    barShown = false;
  };
  return {
    onEvent: (event) => {
      if (event.type === 'train-step') {
        const line = formatStepBar(event);
        if (tty) {
          process.stderr.write(`\r\x1b[2K${line}`);
          barShown = true;
        } else if (
          Date.now() - lastLine >= LOG_EVERY_MS ||
          event.step === event.totalSteps ||
          event.step === 1
        ) {
          process.stderr.write(`${line}\n`);
          lastLine = Date.now();
        }
        return;
      }
      if (event.type === 'eval-progress' && event.done !== event.total && event.done % 20 !== 0) return;
      const line = formatSftEvent(event);
      if (line === null) return;
      clearBar();
      process.stderr.write(`${line}\n`);
    },
    end: clearBar,
  };
}

export function registerTrain(program: Command): void {
  const train = program.command('train').description('train the embedded model');

  train
    .command('sft')
    .description(
      'supervised fine-tuning from scratch on a task family, then held-out eval through the agent loop',
    )
    .option('--task <name>', 'task family', 'arith')
    .option('--text-only', 'train on text-only solutions (the baseline) instead of tool-augmented ones')
    .option('--steps <n>', 'optimizer steps (default 1200)')
    .option('--batch-size <n>', 'sequences per step (default 8)')
    .option('--learning-rate <lr>', 'peak learning rate (default 5e-3; warmup then cosine)')
    .option('--warmup-steps <n>', 'linear warmup steps (default 30)')
    .option('--minutes <m>', 'wall-clock budget for the training steps; the schedule fits it')
    .option('--problems <n>', 'training problems generated (default 8000)')
    .option('--levels <list>', 'levels, e.g. 1,2,3,4 (default all)')
    .option('--seed <n>', 'seed of the initial weights and the data order (default 1)')
    .option('--model <preset>', 'worker preset to train (default tiny)')
    .option('--threads <n>', 'torch threads for training steps (default 1; 0 = all cores)')
    .option('--eval-problems <n>', 'held-out problems evaluated at the end (default 160)')
    .option('--checkpoint-every <n>', 'steps between checkpoints (default 100)')
    .option('--out <dir>', 'run folder (default .agentmath/models/arith-tool or arith-text)')
    .option('--resume', 'continue the run in --out from its last checkpoint')
    .option(
      '--data <file>',
      'train on trajectories.jsonl, sharegpt.json or verl.parquet instead of generated solutions',
    )
    .option('--unmasked', 'also train on interpreter output (default: masked from the loss)')
    .option('--json', 'print the training report as JSON')
    .action(async (flags: SftFlags) => {
      const config = configFrom(flags);
      if (flags.data !== undefined && flags.out === undefined) {
        throw new AgentMathError(
          'CLI_BAD_OPTION',
          '--data needs --out: a model trained on a data file has no default folder',
        );
      }
      const paths = embeddedModelPaths();
      const dir = flags.out ?? (config.style === 'text' ? paths.text : paths.tool);
      const progress = progressWriter();
      const abort = new AbortController();
      const onSigint = () => abort.abort();
      process.once('SIGINT', onSigint);
      try {
        const report = await runSft({
          dir,
          config,
          ...(flags.resume ? { resume: true } : {}),
          onEvent: progress.onEvent,
          signal: abort.signal,
        });
        progress.end();
        process.stdout.write(
          flags.json ? `${JSON.stringify(report, null, 2)}\n` : renderTrainingReport(report),
        );
      } finally {
        progress.end();
        process.off('SIGINT', onSigint);
      }
    });

  train
    .command('compare')
    .description('accuracy by level of the tool model and the text-only baseline, side by side')
    .option('--tool <dir>', 'run folder of the tool model (default .agentmath/models/arith-tool)')
    .option('--text <dir>', 'run folder of the text-only model (default .agentmath/models/arith-text)')
    .option('--json', 'print both reports as JSON')
    .action(async (flags: { tool?: string; text?: string; json?: boolean }) => {
      const paths = embeddedModelPaths();
      const tool = await readTrainingReport(flags.tool ?? paths.tool);
      const text = await readTrainingReport(flags.text ?? paths.text);
      process.stdout.write(
        flags.json ? `${JSON.stringify({ tool, text }, null, 2)}\n` : renderComparison(tool, text),
      );
    });
}
