/**
 * `train rl`'s options that set the run's configuration, as one table: flag → `RlConfig` field,
 * help, parser. The table registers them (their defaults, shown by `--help`, read from
 * `rlConfigSchema`) and turns a command line into the configuration's input, in one order of
 * precedence: what the command line gives, else the saved run's value (`--resume`), else the
 * preset's, else the schema's default. Options that configure nothing but the command itself
 * (`--out`, `--resume`, `--minutes`, `--logger`, …) are registered in `train-rl.ts`.
 */
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { ARITH_MAX_LEVEL } from '../../tasks/index.ts';
import { RL_PRESETS, type RlConfigInput, type RlPresetName, rlConfigSchema } from '../../train/index.ts';
import {
  choiceOption,
  collectHttpUrls,
  httpUrlOption,
  integerOption,
  listOption,
  numberOption,
  SANDBOX_PRELOAD_HELP,
  sandboxPreloadOption,
  usageError,
} from '../cli-options.ts';
import { CPU_OFFLOAD_HELP } from '../cpu-offload-option.ts';

type RlField = keyof RlConfigInput & keyof typeof rlConfigSchema.shape;

/** One option of the table. */
type RlConfigFlag = {
  /** As commander declares it: `--batch-size <B>`, `--mask-void`, `--no-decontaminate`. */
  flags: string;
  field: RlField;
  help: string;
  parse?: (value: string, previous: never) => unknown;
  /** The field's value from the flag's (a path made absolute). */
  toField?: (value: never) => unknown;
};

const positiveInteger = integerOption({ min: 1 });

/** A row of the table. */
function flag(flags: string, field: RlField, help: string, parse?: RlConfigFlag['parse']): RlConfigFlag {
  return { flags, field, help, ...(parse === undefined ? {} : { parse }) };
}

/** A row whose value is a path, kept absolute in the configuration. */
function pathFlag(flags: string, field: RlField, help: string): RlConfigFlag {
  return { flags, field, help, toField: (value: string) => resolve(value) };
}

/** Every option that sets a configuration field, in `--help` order. */
export const RL_CONFIG_FLAGS: readonly RlConfigFlag[] = [
  flag('--task <name>', 'task', 'task family', choiceOption(['arith'] as const)),
  pathFlag(
    '--model <dir>',
    'init',
    'the model folder RL starts from (the byte model or a Hugging Face one); default the ' +
      'project model .agentmath/models/arith-tool/model, or arith-text/model with --text-only',
  ),
  pathFlag(
    '--data <file>',
    'data',
    'training problems: JSONL or Parquet with reference answers (default: the arith task)',
  ),
  flag('--bench <name>', 'bench', 'train on a benchmark by name or path (as eval takes it)'),
  flag(
    '--no-decontaminate',
    'decontaminate',
    'keep training problems that share an 8-word n-gram with the benchmark sets',
  ),
  flag('--eval-bench <name>', 'evalBench', 'held-out evaluation set (default: arith held-out problems)'),
  flag(
    '--prompt <builder>',
    'prompt',
    'prompt builder, rendered by the model’s chat template (default: the one the model was trained with, its training-prompt.json, else instructed)',
    choiceOption(['instructed', 'text-only', 'problem-only'] as const),
  ),
  flag(
    '--dialect <name>',
    'dialect',
    'code-block markup of prompts and rollouts (default: the model’s training-prompt.json, else tags)',
    choiceOption(['tags', 'markdown'] as const),
  ),
  flag(
    '--max-tokens <n>',
    'maxTokens',
    'prompt + response token budget (default: the context length)',
    positiveInteger,
  ),
  flag(
    '--engine <url...>',
    'engines',
    'SGLang engine replicas serving --model: --engine URL URL … or --engine URL repeated',
    collectHttpUrls,
  ),
  flag('--api <api>', 'api', 'engine API', choiceOption(['sglang', 'vllm'] as const)),
  flag(
    '--router <policy>',
    'router',
    'load balancing over the replicas',
    choiceOption(['round-robin', 'least-requests', 'prefix-aware', 'cache-aware'] as const),
  ),
  flag('--replicas <K>', 'replicas', 'embedded engine replicas to start without --engine', positiveInteger),
  flag('--max-in-flight <n>', 'maxInFlight', 'requests in flight per replica', positiveInteger),
  flag(
    '--trainer <url>',
    'trainerUrl',
    'a running distributed trainer (`agentmath trainer serve`; token in AGENTMATH_TRAINER_TOKEN)',
    httpUrlOption,
  ),
  flag(
    '--trainer-procs <P>',
    'trainerProcs',
    'trainer processes to start under torchrun without --trainer',
    positiveInteger,
  ),
  flag('--micro-batch-tokens <n>', 'microBatchTokens', 'tokens per trainer micro-batch', positiveInteger),
  flag(
    '--activation-checkpointing',
    'activationCheckpointing',
    'the trainer started here checkpoints each decoder layer (less memory, ~1/3 more compute)',
  ),
  flag(
    '--logits-chunk-tokens <n>',
    'logitsChunkTokens',
    'tokens per LM-head chunk in the trainer started here (0: full [T x V] logits)',
    integerOption({ min: 0 }),
  ),
  flag(
    '--memory-limit-gb <g>',
    'memoryLimitGb',
    'GiB one trainer rank may hold (0: the device memory); a step estimated above it is refused before it runs',
    numberOption({ min: 0 }),
  ),
  flag('--cpu-offload', 'cpuOffload', `the trainer started here: ${CPU_OFFLOAD_HELP}`),
  flag(
    '--sp <n>',
    'sequenceParallel',
    'sequence parallelism in the trainer started here: ranks that split each packed row (must divide --trainer-procs and the attention heads)',
    positiveInteger,
  ),
  flag(
    '--sandbox <url...>',
    'sandboxes',
    'sandbox nodes (`agentmath sandbox serve`): --sandbox URL URL … or --sandbox URL repeated',
    collectHttpUrls,
  ),
  flag('--sandbox-preload <modules>', 'sandboxPreload', SANDBOX_PRELOAD_HELP, sandboxPreloadOption),
  flag(
    '--max-staleness <S>',
    'maxStaleness',
    'trainer steps the rollout may run ahead (0: synchronous; 1: generate the next batch while this one trains)',
    integerOption({ min: 0 }),
  ),
  flag(
    '--weight-sync <how>',
    'weightSync',
    'how weights reach the engines',
    choiceOption(['disk', 'distributed'] as const),
  ),
  flag(
    '--weight-sync-address <host>',
    'weightSyncAddress',
    "distributed: the trainer's address as the engines reach it (default: this host's address on the route to the first engine)",
  ),
  flag('--text-only', 'textOnly', 'text RL baseline: the policy cannot run code (tool-call budget 0)'),
  flag('--steps <n>', 'steps', 'RL steps', positiveInteger),
  flag('--batch-size <B>', 'batchSize', 'GRPO groups trained on per step', positiveInteger),
  flag('--group-size <n>', 'groupSize', 'trajectories per problem', integerOption({ min: 2 })),
  flag(
    '--learning-rate <lr>',
    'learningRate',
    'peak learning rate (default: by the model’s size, docs/rl.md “Defaults”)',
    numberOption({ min: 0, minExclusive: true }),
  ),
  flag(
    '--eval-every <K>',
    'evalEvery',
    'held-out evaluation every K steps (0: at the end only)',
    integerOption({ min: 0 }),
  ),
  flag(
    '--checkpoint-every <K>',
    'checkpointEvery',
    "the trainer's resume checkpoint every K steps and after the last; a resume redoes the steps since (default 1 for a model under 10 M parameters, else 10)",
    positiveInteger,
  ),
  flag(
    '--keep-checkpoints <N>',
    'keepCheckpoints',
    'checkpoints kept, the newest (older ones this run wrote are deleted)',
    positiveInteger,
  ),
  flag('--eval-problems <n>', 'evalProblems', 'held-out problems per evaluation', positiveInteger),
  flag(
    '--levels <list>',
    'levels',
    'difficulty levels of the RL problems (5: numbers in digit groups, first programs fail)',
    listOption(integerOption({ min: 0, max: ARITH_MAX_LEVEL })),
  ),
  flag(
    '--problems <n>',
    'problemPool',
    'training problems in the pool, cycled over in order',
    positiveInteger,
  ),
  flag('--max-tool-calls <n>', 'maxToolCalls', 'tool calls per trajectory', integerOption({ min: 0 })),
  flag(
    '--partial-rollouts <N>',
    'partialRollouts',
    'segments per trajectory (L_seg = context / N); a trajectory not finished in a step is parked and resumed in the next',
    positiveInteger,
  ),
  flag('--temperature <t>', 'temperature', 'sampling temperature of the rollouts', numberOption({ min: 0 })),
  flag('--kl-coef <beta>', 'klCoef', 'KL penalty to the initial policy (0 = off)', numberOption({ min: 0 })),
  flag(
    '--kl-estimator <k>',
    'klEstimator',
    'KL loss: k3 or k2 (k1 regularises nothing on-policy)',
    choiceOption(['k3', 'k2'] as const),
  ),
  flag(
    '--reward <kind>',
    'reward',
    'composite (answer + code-call bonus) or accuracy (answer only)',
    choiceOption(['composite', 'accuracy'] as const),
  ),
  flag(
    '--tool-reward-alpha <a>',
    'toolRewardAlpha',
    'α of the composite bonus min(R_max, α + β·N_code)',
    numberOption({ min: 0 }),
  ),
  flag('--tool-reward-beta <b>', 'toolRewardBeta', 'β: bonus per code call', numberOption({ min: 0 })),
  flag('--tool-reward-max <m>', 'toolRewardMax', 'R_max: cap of the bonus', numberOption({ min: 0 })),
  flag(
    '--mini-batches <M>',
    'miniBatches',
    'PPO mini-batches per step, each an optimizer update',
    positiveInteger,
  ),
  flag('--epochs <E>', 'epochs', "passes over each step's batch", positiveInteger),
  flag('--clip-low <eps>', 'clipEpsilonLow', 'ε_low of the clipped ratio', numberOption({ min: 0 })),
  flag('--clip-high <eps>', 'clipEpsilonHigh', 'ε_high of the clipped ratio', numberOption({ min: 0 })),
  flag(
    '--dual-clip <c>',
    'dualClip',
    'bound a negative-advantage term below by c·A (c > 1; default off)',
    numberOption({ min: 1, minExclusive: true }),
  ),
  flag(
    '--advantage <form>',
    'advantage',
    'group advantage: std = (r − mean)/std, mean-only = r − mean',
    choiceOption(['std', 'mean-only'] as const),
  ),
  flag(
    '--aggregation <form>',
    'aggregation',
    'loss aggregation over the batch',
    choiceOption(['token-mean', 'sequence-mean'] as const),
  ),
  flag(
    '--proximal <anchor>',
    'proximal',
    "ratio anchor: the engine's logprobs (behaviour) or the trainer's recompute (decoupled)",
    choiceOption(['behaviour', 'recompute'] as const),
  ),
  flag(
    '--rollout-correction <kind>',
    'rolloutCorrection',
    'engine-vs-trainer correction by w = π_prox/π_engine (recompute only): tis truncates w, mis masks tokens outside the thresholds',
    choiceOption(['tis', 'mis'] as const),
  ),
  flag(
    '--rollout-is-threshold <w>',
    'rolloutIsThreshold',
    'upper threshold of w: tis truncates at it, mis masks above it',
    numberOption({ min: 1 }),
  ),
  flag(
    '--rollout-is-threshold-lower <w>',
    'rolloutIsThresholdLower',
    'mis only: tokens with w below it are masked (default 1 / the upper threshold)',
    numberOption({ min: 0, minExclusive: true, max: 1 }),
  ),
  flag('--mask-truncated', 'maskTruncated', 'leave trajectories cut by a budget out of the loss'),
  flag(
    '--mask-void',
    'maskVoid',
    'leave trajectories whose last turn wrote neither code nor an answer out of the loss',
  ),
  flag(
    '--mode <mode>',
    'mode',
    'rollout scheduling: async or sync',
    choiceOption(['async', 'sync'] as const),
  ),
  flag('--seed <s>', 'seed', 'seed of the problem order and the worker', integerOption({ min: 0 })),
  flag(
    '--skip-history',
    'skipHistory',
    'skip problems whose last epochs were all right or all wrong, before generating (problem-history.jsonl)',
  ),
  flag(
    '--skip-base <p>',
    'skipBase',
    'with --skip-history: skip probability after one zero-variance epoch',
    numberOption({ min: 0, max: 1 }),
  ),
  flag(
    '--skip-max <q>',
    'skipMax',
    'with --skip-history: the most a streak of zero-variance epochs reaches',
    numberOption({ min: 0, max: 1 }),
  ),
  flag(
    '--explore <e>',
    'explore',
    'with --skip-history: share of draws never skipped',
    numberOption({ min: 0, max: 1 }),
  ),
  flag(
    '--resample-on-correct <K>',
    'resampleOnCorrect',
    'sample K times the group size and keep the group size: right answers with the fewest tool errors and format faults, wrong ones at random (1: off)',
    numberOption({ min: 1, max: 8 }),
  ),
];

/**
 * Options that mean something only beside another setting: given without it, the run would
 * record them and use them for nothing, so they are refused (exit 2) before anything starts.
 */
const NEEDS: readonly {
  fields: readonly RlField[];
  holds: (config: RlConfigInput) => boolean;
  needs: string;
}[] = [
  {
    fields: ['skipBase', 'skipMax', 'explore'],
    holds: (config) => config.skipHistory === true,
    needs: '--skip-history',
  },
  {
    fields: ['toolRewardAlpha', 'toolRewardBeta', 'toolRewardMax'],
    holds: (config) => config.reward !== 'accuracy',
    needs: '--reward composite (the code-call bonus is part of the composite reward only)',
  },
  {
    fields: ['rolloutIsThresholdLower'],
    holds: (config) => config.rolloutCorrection === 'mis',
    needs: '--rollout-correction mis (only mis has a lower threshold)',
  },
  {
    fields: ['rolloutCorrection', 'rolloutIsThreshold', 'rolloutIsThresholdLower'],
    holds: (config) => config.proximal !== 'behaviour',
    needs:
      '--proximal recompute (the rollout correction weighs tokens by π_prox/π_engine, which --proximal behaviour does not compute)',
  },
];

const optionOf = (entry: RlConfigFlag) => new Option(entry.flags, entry.help);

/** The flag's name as a user types it, from its field. */
export function flagOfField(field: RlField): string {
  const entry = RL_CONFIG_FLAGS.find((candidate) => candidate.field === field);
  return entry === undefined ? field : (optionOf(entry).long ?? field);
}

/** Registers every option of the table on `command`, each with the schema's default for `--help`. */
export function addRlConfigFlags(command: Command): Command {
  for (const entry of RL_CONFIG_FLAGS) {
    const option = optionOf(entry);
    if (entry.parse !== undefined)
      option.argParser(entry.parse as (value: string, previous: unknown) => unknown);
    const fallback = rlConfigSchema.shape[entry.field].safeParse(undefined);
    const shown = fallback.success ? fallback.data : undefined;
    if (
      !option.negate &&
      shown !== undefined &&
      shown !== null &&
      !(Array.isArray(shown) && shown.length === 0)
    )
      option.default(shown);
    command.addOption(option);
  }
  return command;
}

export type RlConfigLayers = {
  /** The preset named by `--preset`, if any. */
  preset?: RlPresetName;
  /** On `--resume`: the run's saved configuration (config.json), whose fields fill what the command line leaves out. */
  saved?: Record<string, unknown> | null;
};

/**
 * The configuration input a command line asks for (see the header for the precedence), with
 * the fields the command line gave; a field it leaves out is absent when no layer sets it (the
 * schema's default applies). Refuses options that need a setting the run does not have.
 */
export function rlConfigInput(
  command: Command,
  { preset, saved = null }: RlConfigLayers = {},
): { input: RlConfigInput; given: Set<RlField> } {
  const values = command.opts() as Record<string, unknown>;
  const input: Record<string, unknown> = { ...(preset === undefined ? {} : RL_PRESETS[preset]) };
  const fields = new Set(Object.keys(rlConfigSchema.shape));
  for (const [field, value] of Object.entries(saved ?? {})) if (fields.has(field)) input[field] = value;
  const given = new Set<RlField>();
  for (const entry of RL_CONFIG_FLAGS) {
    const option = optionOf(entry);
    const name = option.attributeName();
    if (command.getOptionValueSource(name) !== 'cli') continue;
    const value = values[name];
    input[entry.field] = entry.toField === undefined ? value : entry.toField(value as never);
    given.add(entry.field);
  }
  const config = input as RlConfigInput;
  for (const rule of NEEDS) {
    if (rule.holds(config)) continue;
    const named = rule.fields.filter((field) => given.has(field));
    if (named.length > 0)
      throw usageError(
        `${named.map(flagOfField).join(', ')}: ${named.length === 1 ? 'has' : 'have'} no effect without ${rule.needs}`,
      );
  }
  return { input: config, given };
}
