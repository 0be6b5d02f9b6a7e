/**
 * `agentmath train sft`: trains the embedded model on a task family and writes its training
 * report; `agentmath train compare`: the tool model and the text-only baseline side by side.
 * Progress goes to stderr (a bar redrawn in place on a terminal, periodic lines otherwise);
 * the report goes to stdout.
 */
import { type Command, Option } from 'commander';
import { promptBuilders } from '../../agent/index.ts';
import { embeddedModelPaths, isHuggingFaceModelFolder } from '../../model/index.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { assertSameRun, type RunIdentity } from '../../shared/run-identity.ts';
import { ARITH_MAX_LEVEL } from '../../tasks/index.ts';
import {
  formatSftEvent,
  formatStepBar,
  HF_SFT_LEARNING_RATE,
  readSftState,
  readTrainingReport,
  renderComparison,
  renderTrainingReport,
  runSft,
  type SftConfigInput,
  type SftEvent,
  sftConfigSchema,
} from '../../train/index.ts';
import { defaultOf, integerOption, listOption, numberOption } from '../cli-options.ts';
import { CPU_OFFLOAD_HELP } from '../cpu-offload-option.ts';
import { holdSignals, interruptSignal } from '../process-lifecycle.ts';
import { CAPACITY_OVERRIDE, CAPACITY_OVERRIDE_HELP } from '../trainer-capacity-check.ts';
import { registerTrainRl } from './train-rl.ts';
import { type HfSftFlags, runHfSftCommand } from './train-sft-model.ts';

/** A default of the SFT config schema, for `--help`. */
const sftDefault = <K extends keyof SftConfigInput & string>(key: K) => defaultOf(sftConfigSchema, key);

type SftFlags = {
  task: 'arith';
  textOnly?: boolean;
  data?: string;
  unmasked?: boolean;
  steps: number;
  batchSize: number;
  learningRate?: number;
  warmupSteps?: number;
  minutes?: number;
  problems: number;
  levels: number[];
  seed: number;
  model: string;
  threads: number;
  evalProblems: number;
  checkpointEvery: number;
  toolShare: number;
  out?: string;
  resume?: boolean;
  json?: boolean;
};

/** Plain-line interval when stderr is not a terminal. */
const LOG_EVERY_MS = 10_000;

/** Flag name → the SFT config field it sets. */
const CONFIG_FIELDS = {
  steps: 'steps',
  batchSize: 'batchSize',
  learningRate: 'learningRate',
  warmupSteps: 'warmupSteps',
  minutes: 'maxMinutes',
  problems: 'trainProblems',
  levels: 'levels',
  seed: 'seed',
  model: 'model',
  threads: 'trainThreads',
  evalProblems: 'evalProblems',
  checkpointEvery: 'checkpointEvery',
  toolShare: 'toolShare',
} as const satisfies Partial<Record<keyof SftFlags, keyof SftConfigInput>>;

/**
 * The configuration the flags ask for; with `explicitOnly`, only what was given on the
 * command line (a resume continues with the saved configuration and checks these against it).
 */
function configFrom(flags: SftFlags, command: Command, explicitOnly: boolean): SftConfigInput {
  const config: Record<string, unknown> = { task: flags.task };
  if (!explicitOnly || flags.textOnly) config.style = flags.textOnly ? 'text' : 'tool';
  if (flags.data !== undefined) config.dataFile = flags.data;
  if (flags.unmasked) config.maskToolOutput = false;
  for (const [flag, field] of Object.entries(CONFIG_FIELDS)) {
    const value = flags[flag as keyof SftFlags];
    if (value === undefined) continue;
    if (explicitOnly && command.getOptionValueSource(flag) !== 'cli') continue;
    config[field] = value;
  }
  return config as SftConfigInput;
}

/** Refuses a resume whose explicit flags contradict the saved configuration; nothing is written. */
async function checkResume(dir: string, requested: SftConfigInput): Promise<void> {
  const saved = await readSftState(dir);
  if (saved === null) return;
  const savedConfig = saved.config as unknown as RunIdentity;
  const current: RunIdentity = { ...savedConfig, ...(requested as unknown as RunIdentity) };
  assertSameRun({
    run: dir,
    saved: savedConfig,
    current,
    fresh: 'start a new run with another --out (without --resume)',
  });
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
      'supervised fine-tuning: the byte model from scratch on a task family, then held-out eval through ' +
        'the agent loop; or, with --model DIR, a pretrained Hugging Face model fine-tuned on --data by the ' +
        'distributed trainer (prompts through its chat template), exported to OUT/model',
    )
    .addOption(new Option('--task <name>', 'task family').choices(['arith']).default('arith'))
    .option('--text-only', 'train on text-only solutions (the baseline) instead of tool-augmented ones')
    .option(
      '--data <file>',
      'train on trajectories.jsonl, sharegpt.json, verl.parquet or a `tasks write-arith` JSONL instead of generated solutions',
    )
    .option('--unmasked', 'also train on interpreter output (default: masked from the loss)')
    .option(
      '--tool-share <f>',
      'with --text-only: this share of problems gets its tool-augmented solution (a base model that rarely calls code)',
      numberOption({ min: 0, max: 1 }),
      sftDefault('toolShare'),
    )
    .option('--steps <n>', 'optimizer steps', integerOption({ min: 1 }), sftDefault('steps'))
    .option(
      '--batch-size <n>',
      'sequences per step',
      integerOption({ min: 1, max: 4096 }),
      sftDefault('batchSize'),
    )
    .option(
      '--learning-rate <lr>',
      `peak learning rate (warmup then cosine); default ${sftDefault('learningRate')} for the byte model, ` +
        `${HF_SFT_LEARNING_RATE} for --model DIR (a pretrained model is fine-tuned; docs/training.md)`,
      numberOption({ min: 0, minExclusive: true, max: 10 }),
    )
    .option(
      '--warmup-steps <n>',
      `linear warmup steps; default ${sftDefault('warmupSteps')}, with --model DIR a tenth of --steps (at most 30)`,
      integerOption(),
    )
    .option(
      '--minutes <m>',
      'wall-clock budget for the training steps; the schedule is shortened to fit it (default: none; ' +
        'with --resume, the budget of this session)',
      numberOption({ min: 0, minExclusive: true }),
    )
    .option(
      '--problems <n>',
      'training problems generated',
      integerOption({ min: 1 }),
      sftDefault('trainProblems'),
    )
    .option(
      '--levels <list>',
      'levels, e.g. 1,2,3,4 (0: small operands; 5: numbers in digit groups, first programs fail)',
      listOption(integerOption({ min: 0, max: ARITH_MAX_LEVEL })),
      sftDefault('levels'),
    )
    .option(
      '--seed <n>',
      'seed of the initial weights and the data order',
      integerOption(),
      sftDefault('seed'),
    )
    .option(
      '--model <preset|dir>',
      'worker preset to train from scratch (tiny, test), or a Hugging Face model folder (e.g. from `model pull`) ' +
        'to fine-tune on --data with the distributed trainer (FSDP2); then --out is required',
      sftDefault('model'),
    )
    .option(
      '--nproc <p>',
      'with --model DIR: trainer processes (torchrun; gloo on CPU)',
      integerOption({ min: 1, max: 1024 }),
      1,
    )
    .option(
      '--micro-batch-tokens <n>',
      'with --model DIR: token budget of a packed micro-batch',
      integerOption({ min: 16 }),
      8192,
    )
    .option(
      '--max-sequence-tokens <n>',
      "with --model DIR: longer examples are left out (the model's context when that is shorter)",
      integerOption({ min: 16 }),
      32768,
    )
    .option('--activation-checkpointing', 'with --model DIR: recompute activations in the backward pass')
    .option(
      '--sp <n>',
      'with --model DIR: sequence parallelism, ranks that split each packed row (must divide --nproc and the attention heads)',
      integerOption({ min: 1 }),
      1,
    )
    .option('--cpu-offload', `with --model DIR: ${CPU_OFFLOAD_HELP}`)
    .option(CAPACITY_OVERRIDE, `with --model DIR: ${CAPACITY_OVERRIDE_HELP}`)
    .addOption(
      new Option(
        '--prompt <builder>',
        'with --model DIR: the prompt builder (as eval uses for served models), rendered by the model’s chat template',
      )
        .choices(Object.keys(promptBuilders))
        .default('instructed'),
    )
    .addOption(
      new Option(
        '--dialect <name>',
        'with --model DIR: the code-block markup of the prompt and of the data (default tags)',
      ).choices(['tags', 'markdown']),
    )
    .option(
      '--threads <n>',
      'torch threads for training steps (0 = all cores)',
      integerOption({ max: 1024 }),
      sftDefault('trainThreads'),
    )
    .option(
      '--eval-problems <n>',
      'held-out problems evaluated at the end',
      integerOption(),
      sftDefault('evalProblems'),
    )
    .option(
      '--checkpoint-every <n>',
      'steps between checkpoints',
      integerOption({ min: 1 }),
      sftDefault('checkpointEvery'),
    )
    .option('--out <dir>', 'run folder (default .agentmath/models/arith-tool or arith-text)')
    .option('--resume', 'continue the run in --out from its last checkpoint, with its saved configuration')
    .option('--json', 'print the training report as JSON')
    .action(async (flags: SftFlags, command: Command) => {
      if (isHuggingFaceModelFolder(flags.model)) {
        await runHfSftCommand(flags as unknown as HfSftFlags, command);
        return;
      }
      if (command.getOptionValueSource('dialect') === 'cli') {
        throw new AgentMathError(
          'CLI_BAD_OPTION',
          '--dialect applies to --model HF_DIR; the byte model trains the tags dialect',
        );
      }
      if (command.getOptionValueSource('sp') === 'cli') {
        throw new AgentMathError(
          'CLI_BAD_OPTION',
          '--sp applies to --model HF_DIR (the distributed trainer)',
        );
      }
      if (flags.data !== undefined && flags.out === undefined) {
        throw new AgentMathError(
          'CLI_BAD_OPTION',
          '--data needs --out: a model trained on a data file has no default folder',
        );
      }
      const paths = embeddedModelPaths();
      const dir = flags.out ?? (flags.textOnly ? paths.text : paths.tool);
      const config = configFrom(flags, command, false);
      if (flags.resume) await checkResume(dir, configFrom(flags, command, true));
      const progress = progressWriter();
      const release = holdSignals();
      try {
        const report = await runSft({
          dir,
          config,
          ...(flags.resume ? { resume: true } : {}),
          onEvent: progress.onEvent,
          signal: interruptSignal(),
        });
        progress.end();
        process.stdout.write(
          flags.json ? `${JSON.stringify(report, null, 2)}\n` : renderTrainingReport(report),
        );
      } finally {
        progress.end();
        release();
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

  registerTrainRl(train);
}
