/**
 * `agentmath train sft`: the flags of one SFT run for every model (src/train/sft-run.ts), as a
 * table from flag to configuration field. Progress goes to stderr (a bar redrawn in place on a
 * terminal, periodic lines otherwise); the report goes to stdout.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { promptBuilders } from '../../agent/index.ts';
import { assertHuggingFaceTokenizerFiles, embeddedModelPaths } from '../../model/index.ts';
import { readRunConfigFile } from '../../shared/run-config-file.ts';
import { assertNotAFile } from '../../shared/run-folder-check.ts';
import { ARITH_MAX_LEVEL } from '../../tasks/index.ts';
import {
  FINE_TUNING_LEARNING_RATE,
  FROM_SCRATCH_LEARNING_RATE,
  formatSftEvent,
  formatStepBar,
  renderTrainingReport,
  resolveSftConfig,
  runSft,
  type SftConfigInput,
  type SftEvent,
  savedRunSteps,
  sftConfigSchema,
} from '../../train/index.ts';
import { defaultOf, integerOption, listOption, numberOption, usageError } from '../cli-options.ts';
import { CPU_OFFLOAD_HELP } from '../cpu-offload-option.ts';
import { holdSignals, interruptSignal } from '../process-lifecycle.ts';
import { resumeCommand } from '../resume-command.ts';
import {
  assertTrainerCapacity,
  CAPACITY_OVERRIDE,
  CAPACITY_OVERRIDE_HELP,
} from '../trainer-capacity-check.ts';

/** A default of the SFT config schema, for `--help`. */
const d = <K extends keyof SftConfigInput & string>(key: K) => defaultOf(sftConfigSchema, key);

type SftFlags = Record<string, unknown> & {
  textOnly?: boolean;
  unmasked?: boolean;
  out?: string;
  resume?: boolean;
  json?: boolean;
  capacityCheck?: boolean;
};

/** Flag (commander's camel-case name) → the configuration field it sets, as given. */
const FLAG_FIELDS = {
  model: 'model',
  data: 'data',
  task: 'task',
  problems: 'trainProblems',
  levels: 'levels',
  levelWeights: 'levelWeights',
  toolShare: 'toolShare',
  dialect: 'dialect',
  prompt: 'prompt',
  seed: 'seed',
  steps: 'steps',
  minutes: 'maxMinutes',
  batchSize: 'batchSize',
  learningRate: 'learningRate',
  warmupSteps: 'warmupSteps',
  checkpointEvery: 'checkpointEvery',
  nproc: 'processes',
  threads: 'threads',
  microBatchTokens: 'microBatchTokens',
  maxSequenceTokens: 'maxSequenceTokens',
  activationCheckpointing: 'activationCheckpointing',
  sp: 'sequenceParallel',
  cpuOffload: 'cpuOffload',
  evalProblems: 'evalProblems',
} as const satisfies Record<string, keyof SftConfigInput>;

/** Plain-line interval when stderr is not a terminal. */
const LOG_EVERY_MS = 10_000;

/** The configuration the command line asks for: flags given, on the saved run's when resuming. */
async function configOf(flags: SftFlags, command: Command, dir: string): Promise<SftConfigInput> {
  const given: Record<string, unknown> = {};
  for (const [flag, field] of Object.entries(FLAG_FIELDS)) {
    if (command.getOptionValueSource(flag) === 'cli') given[field] = flags[flag];
  }
  if (flags.textOnly) given.style = 'text';
  if (flags.unmasked) given.maskToolOutput = false;
  const savedPath = join(dir, 'config.json');
  if (!flags.resume || !existsSync(savedPath)) return given as SftConfigInput;
  // A resume continues the saved run: what was not given is the saved value; what was given is
  // compared with it by the run (a change is refused), except the fields that size the run.
  const saved = (await readRunConfigFile(savedPath)) as Record<string, unknown>;
  const base: Record<string, unknown> = {};
  for (const field of Object.keys(sftConfigSchema.shape)) if (field in saved) base[field] = saved[field];
  if (given.steps === undefined) base.steps = (await savedRunSteps(dir)) ?? base.steps;
  if (given.maxMinutes === undefined) base.maxMinutes = null;
  return { ...base, ...given } as SftConfigInput;
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

export function registerTrainSft(train: Command): void {
  train
    .command('sft')
    .description(
      'supervised fine-tuning of any model on the trainer: a new byte model from scratch (no --model), or a ' +
        'model folder (e.g. from `model pull`), on arith solutions it writes or on --data; then held-out ' +
        'evaluation through the agent loop and a training report; the model is exported to OUT/model',
    )
    .option(
      '--model <dir>',
      'the model folder to train (default: a new byte model, `model init --arch byte-gpt`)',
    )
    .option(
      '--data <file>',
      'train on trajectories.jsonl, sharegpt.json, verl.parquet or a `tasks write-arith` JSONL instead of generated solutions',
    )
    .addOption(new Option('--task <name>', 'task family of generated solutions').choices(['arith']))
    .option('--text-only', 'generated solutions: text-only (the baseline) instead of tool-augmented ones')
    .option('--unmasked', 'also train on interpreter output (default: masked from the loss)')
    .option(
      '--tool-share <f>',
      `with --text-only: this share of problems gets its tool-augmented solution (a base model that rarely calls code; default ${d('toolShare')})`,
      numberOption({ min: 0, max: 1 }),
    )
    .option(
      '--problems <n>',
      `training problems generated (default ${d('trainProblems')})`,
      integerOption({ min: 1 }),
    )
    .option(
      '--levels <list>',
      `levels of generated problems, e.g. 1,2,3,4 (0: small operands; 5: numbers in digit groups, first programs fail; default ${String(d('levels'))})`,
      listOption(integerOption({ min: 0, max: ARITH_MAX_LEVEL })),
    )
    .option(
      '--level-weights <list>',
      'problems per level in each turn, one per --levels entry (--levels 1,2,3,4,5 --level-weights 4,4,4,4,1: level 5 thinly, 1 problem in 17; default: 1 each)',
      listOption(integerOption({ min: 1 })),
    )
    .addOption(
      new Option(
        '--dialect <name>',
        'the code-block markup of the prompt and the data (default: what the model declares, else tags)',
      ).choices(['tags', 'markdown']),
    )
    .addOption(
      new Option(
        '--prompt <builder>',
        'how a problem becomes the prompt, through the model’s chat template (default: what the model declares, else instructed)',
      ).choices(Object.keys(promptBuilders)),
    )
    .option('--steps <n>', `optimizer steps (default ${d('steps')})`, integerOption({ min: 1 }))
    .option(
      '--batch-size <n>',
      `sequences per step (default ${d('batchSize')})`,
      integerOption({ min: 1, max: 4096 }),
    )
    .option(
      '--learning-rate <lr>',
      `peak learning rate (warmup then cosine); default ${FROM_SCRATCH_LEARNING_RATE} for a model \`model init\` wrote ` +
        `(trained from scratch), ${FINE_TUNING_LEARNING_RATE} for a pretrained one (docs/training.md)`,
      numberOption({ min: 0, minExclusive: true, max: 10 }),
    )
    .option(
      '--warmup-steps <n>',
      'linear warmup steps (default 30 from scratch, else a tenth of --steps, at most 30)',
      integerOption(),
    )
    .option(
      '--minutes <m>',
      'wall-clock budget for the training steps; the schedule is shortened to fit it (with --resume: this session’s)',
      numberOption({ min: 0, minExclusive: true }),
    )
    .option(
      '--seed <n>',
      `seed of a new model's weights and of the data (default ${d('seed')})`,
      integerOption(),
    )
    .option(
      '--checkpoint-every <n>',
      `steps between checkpoints (default ${d('checkpointEvery')})`,
      integerOption({ min: 1 }),
    )
    .option(
      '--nproc <p>',
      'trainer processes (torchrun from 2; gloo on CPU)',
      integerOption({ min: 1, max: 1024 }),
    )
    .option(
      '--threads <n>',
      'torch threads of each CPU rank (default 0: its share of the cores)',
      integerOption({ max: 1024 }),
    )
    .option(
      '--micro-batch-tokens <n>',
      `token budget of a packed micro-batch (default ${d('microBatchTokens')})`,
      integerOption({ min: 16 }),
    )
    .option(
      '--max-sequence-tokens <n>',
      'longer examples are left out (default: the model’s context length)',
      integerOption({ min: 16 }),
    )
    .option('--activation-checkpointing', 'recompute activations in the backward pass')
    .option(
      '--sp <n>',
      'sequence parallelism: ranks that split each packed row (must divide --nproc and the attention heads)',
      integerOption({ min: 1 }),
    )
    .option('--cpu-offload', CPU_OFFLOAD_HELP)
    .option(CAPACITY_OVERRIDE, CAPACITY_OVERRIDE_HELP)
    .option(
      '--eval-problems <n>',
      `held-out arith problems evaluated at the end, 0 for none (default ${d('evalProblems')})`,
      integerOption(),
    )
    .option(
      '--out <dir>',
      'run folder (default without --model and --data: .agentmath/models/arith-tool, or arith-text with --text-only)',
    )
    .option('--resume', 'continue the run in --out where it stopped, with its saved configuration')
    .option('--json', 'print the training report as JSON')
    .action(async (flags: SftFlags, command: Command) => {
      const named = flags.model !== undefined || flags.data !== undefined;
      if (flags.out === undefined && named) {
        throw usageError(
          '--model and --data need --out: a run on a given model or data file has no default folder',
        );
      }
      const paths = embeddedModelPaths();
      const dir = resolve(flags.out ?? (flags.textOnly ? paths.text : paths.tool));
      assertNotAFile(dir);
      const config = resolveSftConfig(await configOf(flags, command, dir), 'train sft');
      if (config.model !== null) {
        assertHuggingFaceTokenizerFiles(config.model);
        assertTrainerCapacity({
          processes: config.processes,
          model: config.model,
          flag: '--nproc',
          check: flags.capacityCheck,
        });
      }
      const progress = progressWriter();
      const release = holdSignals();
      try {
        const result = await runSft({
          out: dir,
          config,
          resume: flags.resume === true,
          onEvent: progress.onEvent,
          signal: interruptSignal(),
        });
        progress.end();
        if (result.status === 'stopped') {
          // A stop asked for by a signal is not a failure: main.ts re-raises the signal.
          process.stderr.write(
            `stopped at step ${result.step}/${result.totalSteps} (checkpoint ${result.checkpoint}); resume with:\n` +
              `  ${resumeCommand(process.argv.slice(2), dir)}\n`,
          );
          return;
        }
        process.stdout.write(
          flags.json ? `${JSON.stringify(result.report, null, 2)}\n` : renderTrainingReport(result.report),
        );
      } finally {
        progress.end();
        release();
      }
    });
}
