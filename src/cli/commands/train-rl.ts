/**
 * `agentmath train rl`: agentic RL (GRPO over the rollout system) from an SFT model folder:
 * the embedded byte model (`--init`, trained colocated), or a Hugging Face model (`--model`) on
 * engine replicas (started here, or `--engine URL …`) with the distributed trainer (started
 * here under torchrun, or `--trainer URL`), weights synced after each step. Progress on stderr,
 * one line per step; `--json` prints the step metrics as JSON on stdout at the end. Wiring
 * only: the loop is `src/train/rl-run.ts`, the parts `src/train/rl-start-parts.ts`.
 */
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { Command } from 'commander';
import {
  assertHuggingFaceTokenizerFiles,
  embeddedModelPaths,
  isHuggingFaceModelFolder,
} from '../../model/index.ts';
import { assertRunIdentity, readCheckpoint } from '../../rollout/index.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { assertNotAFile } from '../../shared/run-folder-check.ts';
import { acquireRunFolderLock } from '../../shared/run-folder-lock.ts';
import { ARITH_MAX_LEVEL } from '../../tasks/index.ts';
import {
  defaultRlLearningRate,
  type MetricsLogger,
  metricScalars,
  openMetricsLogger,
  presetValues,
  RL_PRESET_NAMES,
  RL_PRESETS,
  type RlEvent,
  type RlParts,
  type RlPresetName,
  resolveRlConfig,
  rlConfigSchema,
  rlDefiningConfig,
  runRl,
  safetensorsParameterCount,
  startRlParts,
} from '../../train/index.ts';
import {
  choiceOption,
  collectHttpUrls,
  defaultOf,
  httpUrlOption,
  integerOption,
  listOption,
  numberOption,
  usageError,
} from '../cli-options.ts';
import { CPU_OFFLOAD_HELP } from '../cpu-offload-option.ts';
import { holdSignals, interruptSignal, onShutdown } from '../process-lifecycle.ts';
import {
  assertTrainerCapacity,
  CAPACITY_OVERRIDE,
  CAPACITY_OVERRIDE_HELP,
} from '../trainer-capacity-check.ts';

type RlFlags = {
  /** false with --no-capacity-check. */
  capacityCheck?: boolean;
  task: 'arith';
  init?: string;
  model?: string;
  data?: string;
  bench?: string;
  decontaminate: boolean;
  evalBench?: string;
  prompt?: 'instructed' | 'text-only' | 'problem-only';
  dialect: 'tags' | 'markdown';
  preset?: RlPresetName;
  maxTokens?: number;
  engine: string[];
  api: 'sglang' | 'vllm';
  router: 'round-robin' | 'least-requests' | 'prefix-aware' | 'cache-aware';
  replicas: number;
  maxInFlight: number;
  trainer?: string;
  trainerProcs: number;
  microBatchTokens: number;
  activationCheckpointing?: boolean;
  logitsChunkTokens: number;
  memoryLimitGb: number;
  sp: number;
  cpuOffload?: boolean;
  sandbox: string[];
  maxStaleness: number;
  weightSync: 'disk' | 'distributed';
  weightSyncAddress?: string;
  logger?: 'tensorboard' | 'wandb';
  textOnly?: boolean;
  steps: number;
  batchSize: number;
  groupSize: number;
  learningRate?: number;
  evalEvery: number;
  checkpointEvery?: number;
  keepCheckpoints: number;
  evalProblems: number;
  levels: number[];
  problems: number;
  maxToolCalls: number;
  partialRollouts: number;
  temperature: number;
  klCoef: number;
  klEstimator: 'k3' | 'k2';
  reward: 'composite' | 'accuracy';
  toolRewardAlpha: number;
  toolRewardBeta: number;
  toolRewardMax: number;
  miniBatches: number;
  epochs: number;
  clipLow: number;
  clipHigh: number;
  dualClip?: number;
  advantage: 'std' | 'mean-only';
  aggregation: 'token-mean' | 'sequence-mean';
  proximal: 'behaviour' | 'recompute';
  rolloutCorrection?: 'tis' | 'mis';
  rolloutIsThreshold?: number;
  rolloutIsThresholdLower?: number;
  maskTruncated?: boolean;
  maskVoid?: boolean;
  skipHistory?: boolean;
  skipBase: number;
  skipMax: number;
  explore: number;
  resampleOnCorrect: number;
  mode: 'async' | 'sync';
  seed: number;
  minutes?: number;
  out?: string;
  resume?: boolean;
  json?: boolean;
};

/**
 * `--learning-rate` by size for a Hugging Face model (docs/rl.md, "Defaults"), said on stderr;
 * undefined when the folder does not exist (refused further on, naming it).
 */
function modelLearningRate(folder: string): number | undefined {
  if (!existsSync(folder)) return undefined;
  const parameters = safetensorsParameterCount(folder);
  if (parameters === null)
    throw usageError(
      `--model ${folder}: no *.safetensors to size the learning rate by; give --learning-rate`,
    );
  const rate = defaultRlLearningRate(parameters);
  process.stderr.write(
    `learning rate ${rate} (no --learning-rate: the default for ${(parameters / 1e6).toFixed(1)} M parameters, docs/rl.md)\n`,
  );
  return rate;
}

const d = <K extends keyof ReturnType<typeof rlConfigSchema.parse> & string>(key: K) =>
  defaultOf(rlConfigSchema, key);

function describePreset(name: RlPresetName): string {
  return Object.entries(RL_PRESETS[name])
    .map(([field, value]) => `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} ${value}`)
    .join(', ');
}

export function registerTrainRl(train: Command): void {
  train
    .command('rl')
    .description(
      'agentic RL (GRPO, interpreter tokens masked) from an SFT model: the embedded one, or --model HF_DIR on engine replicas',
    )
    .option('--task <name>', 'task family', choiceOption(['arith'] as const), 'arith')
    .option(
      '--init <dir>',
      'model folder to start from (default .agentmath/models/arith-tool, or arith-text with --text-only)',
    )
    .option(
      '--model <dir>',
      'a Hugging Face model folder to start from (engine replicas + the distributed trainer)',
    )
    .option(
      '--data <file>',
      'training problems: JSONL or Parquet with reference answers (default: the arith task)',
    )
    .option('--bench <name>', 'train on a benchmark by name or path (as eval takes it)')
    .option(
      '--no-decontaminate',
      'keep training problems that share an 8-word n-gram with the benchmark sets',
    )
    .option('--eval-bench <name>', 'held-out evaluation set (default: arith held-out problems)')
    .option(
      '--prompt <builder>',
      'prompt builder, rendered by the model’s chat template (default: problem-only for the byte model, instructed for --model)',
      choiceOption(['instructed', 'text-only', 'problem-only'] as const),
    )
    .option(
      '--dialect <name>',
      'code-block markup of prompts and rollouts (markdown: with --model only)',
      choiceOption(['tags', 'markdown'] as const),
      d('dialect'),
    )
    .option(
      '--preset <name>',
      `defaults for a setting; cpu: a pretrained --model on a few CPU cores (${describePreset('cpu')}); flags given win`,
      choiceOption(RL_PRESET_NAMES),
    )
    .option(
      '--max-tokens <n>',
      'prompt + response token budget (default: the context length)',
      integerOption({ min: 1 }),
    )
    .option(
      '--engine <url...>',
      'SGLang engine replicas serving --model: --engine URL URL … or --engine URL repeated',
      collectHttpUrls,
      [],
    )
    .option('--api <api>', 'engine API', choiceOption(['sglang', 'vllm'] as const), d('api'))
    .option(
      '--router <policy>',
      'load balancing over the replicas',
      choiceOption(['round-robin', 'least-requests', 'prefix-aware', 'cache-aware'] as const),
      d('router'),
    )
    .option(
      '--replicas <K>',
      'embedded engine replicas to start without --engine',
      integerOption({ min: 1 }),
      d('replicas'),
    )
    .option(
      '--max-in-flight <n>',
      'requests in flight per replica',
      integerOption({ min: 1 }),
      d('maxInFlight'),
    )
    .option(
      '--trainer <url>',
      'a running distributed trainer (`agentmath trainer serve`; token in AGENTMATH_TRAINER_TOKEN)',
      httpUrlOption,
    )
    .option(
      '--trainer-procs <P>',
      'trainer processes to start under torchrun without --trainer',
      integerOption({ min: 1 }),
      d('trainerProcs'),
    )
    .option(CAPACITY_OVERRIDE, `with --model: ${CAPACITY_OVERRIDE_HELP}`)
    .option(
      '--micro-batch-tokens <n>',
      'tokens per trainer micro-batch',
      integerOption({ min: 1 }),
      d('microBatchTokens'),
    )
    .option(
      '--activation-checkpointing',
      'the trainer started here checkpoints each decoder layer (less memory, ~1/3 more compute)',
    )
    .option(
      '--logits-chunk-tokens <n>',
      'tokens per LM-head chunk in the trainer started here (0: full [T x V] logits)',
      integerOption({ min: 0 }),
      d('logitsChunkTokens'),
    )
    .option(
      '--memory-limit-gb <g>',
      'GiB one trainer rank may hold (0: the device memory); a step estimated above it is refused before it runs',
      numberOption({ min: 0 }),
      d('memoryLimitGb'),
    )
    .option('--cpu-offload', `the trainer started here: ${CPU_OFFLOAD_HELP}`)
    .option(
      '--sp <n>',
      'sequence parallelism in the trainer started here: ranks that split each packed row (must divide --trainer-procs and the attention heads)',
      integerOption({ min: 1 }),
      d('sequenceParallel'),
    )
    .option(
      '--sandbox <url...>',
      'sandbox nodes (`agentmath sandbox serve`): --sandbox URL URL … or --sandbox URL repeated',
      collectHttpUrls,
      [],
    )
    .option(
      '--max-staleness <S>',
      'trainer steps the rollout may run ahead (0: synchronous; 1: generate the next batch while this one trains)',
      integerOption({ min: 0 }),
      d('maxStaleness'),
    )
    .option(
      '--weight-sync <how>',
      'how weights reach the engines',
      choiceOption(['disk', 'distributed'] as const),
      d('weightSync'),
    )
    .option(
      '--weight-sync-address <host>',
      "distributed: the trainer's address as the engines reach it (default: this host's address on the route to the first engine)",
    )
    .option(
      '--logger <kind>',
      'also log the step metrics to tensorboard or wandb',
      choiceOption(['tensorboard', 'wandb'] as const),
    )
    .option('--text-only', 'text RL baseline: the policy cannot run code (tool-call budget 0)')
    .option('--steps <n>', 'RL steps', integerOption({ min: 1 }), d('steps'))
    .option('--batch-size <B>', 'GRPO groups trained on per step', integerOption({ min: 1 }), d('batchSize'))
    .option('--group-size <n>', 'trajectories per problem', integerOption({ min: 2 }), d('groupSize'))
    .option(
      '--learning-rate <lr>',
      `learning rate (default: ${d('learningRate')} for the byte model; for --model, by its size: docs/rl.md)`,
      numberOption({ min: 0, minExclusive: true }),
    )
    .option(
      '--eval-every <K>',
      'held-out evaluation every K steps (0: at the end only)',
      integerOption({ min: 0 }),
      d('evalEvery'),
    )
    .option(
      '--checkpoint-every <K>',
      "the trainer's resume checkpoint every K steps and after the last; a resume redoes the steps since (default 1 for the byte model, 10 for --model)",
      integerOption({ min: 1 }),
    )
    .option(
      '--keep-checkpoints <N>',
      'checkpoints kept, the newest (older ones this run wrote are deleted)',
      integerOption({ min: 1 }),
      d('keepCheckpoints'),
    )
    .option(
      '--eval-problems <n>',
      'held-out problems per evaluation',
      integerOption({ min: 1 }),
      d('evalProblems'),
    )
    .option(
      '--levels <list>',
      'difficulty levels of the RL problems (5: numbers in digit groups, first programs fail)',
      listOption(integerOption({ min: 0, max: ARITH_MAX_LEVEL })),
      d('levels'),
    )
    .option(
      '--problems <n>',
      'training problems in the pool, cycled over in order',
      integerOption({ min: 1 }),
      d('problemPool'),
    )
    .option('--max-tool-calls <n>', 'tool calls per trajectory', integerOption({ min: 0 }), d('maxToolCalls'))
    .option(
      '--partial-rollouts <N>',
      'segments per trajectory (L_seg = context / N)',
      integerOption({ min: 1 }),
      d('partialRollouts'),
    )
    .option(
      '--temperature <t>',
      'sampling temperature of the rollouts',
      numberOption({ min: 0 }),
      d('temperature'),
    )
    .option(
      '--kl-coef <beta>',
      'KL penalty to the initial policy (0 = off)',
      numberOption({ min: 0 }),
      d('klCoef'),
    )
    .option(
      '--kl-estimator <k>',
      'KL loss: k3 or k2 (k1 regularises nothing on-policy)',
      choiceOption(['k3', 'k2'] as const),
      d('klEstimator'),
    )
    .option(
      '--reward <kind>',
      'composite (answer + code-call bonus) or accuracy (answer only)',
      choiceOption(['composite', 'accuracy'] as const),
      d('reward'),
    )
    .option(
      '--tool-reward-alpha <a>',
      'α of the composite bonus min(R_max, α + β·N_code)',
      numberOption({ min: 0 }),
      d('toolRewardAlpha'),
    )
    .option('--tool-reward-beta <b>', 'β: bonus per code call', numberOption({ min: 0 }), d('toolRewardBeta'))
    .option('--tool-reward-max <m>', 'R_max: cap of the bonus', numberOption({ min: 0 }), d('toolRewardMax'))
    .option(
      '--mini-batches <M>',
      'PPO mini-batches per step, each an optimizer update',
      integerOption({ min: 1 }),
      d('miniBatches'),
    )
    .option('--epochs <E>', "passes over each step's batch", integerOption({ min: 1 }), d('epochs'))
    .option('--clip-low <eps>', 'ε_low of the clipped ratio', numberOption({ min: 0 }), d('clipEpsilonLow'))
    .option(
      '--clip-high <eps>',
      'ε_high of the clipped ratio',
      numberOption({ min: 0 }),
      d('clipEpsilonHigh'),
    )
    .option(
      '--dual-clip <c>',
      'bound a negative-advantage term below by c·A (c > 1; default off)',
      numberOption({ min: 1, minExclusive: true }),
    )
    .option(
      '--advantage <form>',
      'group advantage: std = (r − mean)/std, mean-only = r − mean',
      choiceOption(['std', 'mean-only'] as const),
      d('advantage'),
    )
    .option(
      '--aggregation <form>',
      'loss aggregation over the batch',
      choiceOption(['token-mean', 'sequence-mean'] as const),
      d('aggregation'),
    )
    .option(
      '--proximal <anchor>',
      "ratio anchor: the engine's logprobs (behaviour) or the trainer's recompute (decoupled)",
      choiceOption(['behaviour', 'recompute'] as const),
      d('proximal'),
    )
    .option(
      '--rollout-correction <kind>',
      `engine-vs-trainer correction by w = π_prox/π_engine (recompute only): tis truncates w, mis masks tokens outside the thresholds (default ${d('rolloutCorrection')})`,
      choiceOption(['tis', 'mis'] as const),
    )
    .option(
      '--rollout-is-threshold <w>',
      `upper threshold of w: tis truncates at it, mis masks above it (default ${d('rolloutIsThreshold')})`,
      numberOption({ min: 1 }),
    )
    .option(
      '--rollout-is-threshold-lower <w>',
      'mis only: tokens with w below it are masked (default 1 / the upper threshold)',
      numberOption({ min: 0, minExclusive: true, max: 1 }),
    )
    .option('--mask-truncated', 'leave trajectories cut by a budget out of the loss')
    .option(
      '--mask-void',
      'leave trajectories whose last turn wrote neither code nor an answer out of the loss',
    )
    .option(
      '--mode <mode>',
      'rollout scheduling: async or sync',
      choiceOption(['async', 'sync'] as const),
      d('mode'),
    )
    .option('--seed <s>', 'seed of the problem order and the worker', integerOption({ min: 0 }), d('seed'))
    .option(
      '--skip-history',
      'skip problems whose last epochs were all right or all wrong, before generating (problem-history.jsonl)',
    )
    .option(
      '--skip-base <p>',
      'with --skip-history: skip probability after one zero-variance epoch',
      numberOption({ min: 0, max: 1 }),
      d('skipBase'),
    )
    .option(
      '--skip-max <q>',
      'with --skip-history: the most a streak of zero-variance epochs reaches',
      numberOption({ min: 0, max: 1 }),
      d('skipMax'),
    )
    .option(
      '--explore <e>',
      'with --skip-history: share of draws never skipped',
      numberOption({ min: 0, max: 1 }),
      d('explore'),
    )
    .option(
      '--resample-on-correct <K>',
      'sample K times the group size and keep the group size: right answers with the fewest tool errors and format faults, wrong ones at random (1: off)',
      numberOption({ min: 1, max: 8 }),
      d('resampleOnCorrect'),
    )
    .option(
      '--minutes <m>',
      'stop at a step boundary after M minutes (resumable)',
      numberOption({ min: 0, minExclusive: true }),
    )
    .option('--out <dir>', 'run folder (default runs/rl-<tool|text>-<time>)')
    .option('--resume', 'continue the run in --out after a stop or a kill')
    .option('--json', 'print the metrics of every step as JSON on stdout')
    .action(async (flags: RlFlags, command: Command) => {
      if (flags.preset !== undefined) {
        Object.assign(
          flags,
          presetValues(flags.preset, (flag) => command.getOptionValueSource(flag) === 'cli'),
        );
      }
      if (flags.init !== undefined && flags.model !== undefined)
        throw usageError('--init and --model both name the model to start from: give one');
      if (flags.data !== undefined && flags.bench !== undefined)
        throw usageError('--data and --bench both name the training problems: give one');
      if (flags.proximal === 'behaviour') {
        const correction = [
          ['--rollout-correction', flags.rolloutCorrection],
          ['--rollout-is-threshold', flags.rolloutIsThreshold],
          ['--rollout-is-threshold-lower', flags.rolloutIsThresholdLower],
        ].filter(([, value]) => value !== undefined);
        if (correction.length > 0)
          throw usageError(
            `${correction.map(([flag]) => flag).join(', ')}: the rollout correction weighs tokens by π_prox/π_engine, which --proximal behaviour does not compute; use --proximal recompute`,
          );
      }
      if (flags.rolloutIsThresholdLower !== undefined && flags.rolloutCorrection !== 'mis')
        throw usageError('--rollout-is-threshold-lower: only --rollout-correction mis has a lower threshold');
      const paths = embeddedModelPaths();
      const init = resolve(flags.model ?? flags.init ?? (flags.textOnly ? paths.text : paths.tool));
      const config = resolveRlConfig({
        task: flags.task,
        init,
        data: flags.data === undefined ? null : resolve(flags.data),
        bench: flags.bench ?? null,
        decontaminate: flags.decontaminate,
        evalBench: flags.evalBench ?? null,
        prompt: flags.prompt ?? null,
        dialect: flags.dialect,
        maxTokens: flags.maxTokens ?? null,
        engines: flags.engine,
        api: flags.api,
        router: flags.router,
        replicas: flags.replicas,
        maxInFlight: flags.maxInFlight,
        trainerUrl: flags.trainer ?? null,
        trainerProcs: flags.trainerProcs,
        microBatchTokens: flags.microBatchTokens,
        activationCheckpointing: flags.activationCheckpointing === true,
        logitsChunkTokens: flags.logitsChunkTokens,
        memoryLimitGb: flags.memoryLimitGb,
        sequenceParallel: flags.sp,
        cpuOffload: flags.cpuOffload === true,
        sandboxes: flags.sandbox,
        maxStaleness: flags.maxStaleness,
        weightSync: flags.weightSync,
        weightSyncAddress: flags.weightSyncAddress ?? null,
        textOnly: flags.textOnly === true,
        steps: flags.steps,
        batchSize: flags.batchSize,
        groupSize: flags.groupSize,
        learningRate: flags.learningRate ?? (flags.model === undefined ? undefined : modelLearningRate(init)),
        evalEvery: flags.evalEvery,
        checkpointEvery: flags.checkpointEvery ?? null,
        keepCheckpoints: flags.keepCheckpoints,
        evalProblems: flags.evalProblems,
        levels: flags.levels,
        problemPool: flags.problems,
        maxToolCalls: flags.maxToolCalls,
        partialRollouts: flags.partialRollouts,
        temperature: flags.temperature,
        klCoef: flags.klCoef,
        klEstimator: flags.klEstimator,
        reward: flags.reward,
        toolRewardAlpha: flags.toolRewardAlpha,
        toolRewardBeta: flags.toolRewardBeta,
        toolRewardMax: flags.toolRewardMax,
        miniBatches: flags.miniBatches,
        epochs: flags.epochs,
        clipEpsilonLow: flags.clipLow,
        clipEpsilonHigh: flags.clipHigh,
        dualClip: flags.dualClip ?? null,
        advantage: flags.advantage,
        aggregation: flags.aggregation,
        proximal: flags.proximal,
        rolloutCorrection: flags.rolloutCorrection,
        rolloutIsThreshold: flags.rolloutIsThreshold,
        rolloutIsThresholdLower: flags.rolloutIsThresholdLower ?? null,
        maskTruncated: flags.maskTruncated === true,
        maskVoid: flags.maskVoid === true,
        mode: flags.mode,
        seed: flags.seed,
        skipHistory: flags.skipHistory === true,
        skipBase: flags.skipBase,
        skipMax: flags.skipMax,
        explore: flags.explore,
        resampleOnCorrect: flags.resampleOnCorrect,
      });
      const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
      const folder = resolve(flags.out ?? `runs/rl-${config.textOnly ? 'text' : 'tool'}-${stamp}`);
      // Checked before anything starts: a refusal leaves nothing running.
      assertNotAFile(folder);
      if (!existsSync(config.init)) {
        throw new AgentMathError(
          'INPUT_NOT_FOUND',
          `model folder ${config.init} (${flags.model === undefined ? '--init' : '--model'}) does not exist`,
        );
      }
      if (isHuggingFaceModelFolder(config.init)) {
        assertHuggingFaceTokenizerFiles(config.init, flags.model === undefined ? '--init' : '--model');
      }
      if (config.trainerUrl === null && isHuggingFaceModelFolder(config.init)) {
        assertTrainerCapacity({
          processes: config.trainerProcs,
          model: config.init,
          flag: '--trainer-procs',
          check: flags.capacityCheck,
        });
      }
      if (config.data !== null && !existsSync(config.data))
        throw new AgentMathError('INPUT_NOT_FOUND', `training data ${config.data} (--data) does not exist`);
      await assertRunIdentity(folder, rlDefiningConfig(config), flags.resume === true);
      const releaseLock = await acquireRunFolderLock(folder, { command: 'train rl' });
      const unregisterLock = onShutdown(releaseLock);
      const release = holdSignals();
      const signal = interruptSignal();
      const log = (line: string) => process.stderr.write(`${line}\n`);
      let parts: RlParts | null = null;
      let logger: MetricsLogger | null = null;
      const stopParts = async () => {
        await parts?.close();
      };
      const unregisterParts = onShutdown(stopParts);
      try {
        logger =
          flags.logger === undefined
            ? null
            : await openMetricsLogger({
                kind: flags.logger,
                folder,
                runName: basename(folder),
                config,
                // After a resume, TensorBoard drops the points of the steps being redone.
                ...(flags.resume === true
                  ? { resumeFromStep: (await readCheckpoint(folder))?.nextStep ?? 0 }
                  : {}),
              });
        parts = await startRlParts(config, folder, log);
        const metrics = await runRl({
          folder,
          config,
          resume: flags.resume === true,
          parts,
          ...(flags.minutes === undefined ? {} : { minutes: flags.minutes }),
          signal,
          log,
          onEvent: (event) => {
            process.stderr.write(formatRlEvent(event));
            const row =
              event.type === 'rl-step'
                ? { step: event.metrics.step, scalars: metricScalars(event.metrics) }
                : event.type === 'rl-eval'
                  ? { step: event.record.step, scalars: metricScalars({ eval: event.record }) }
                  : null;
            if (logger !== null && row !== null) {
              Promise.resolve(logger.log(row.step, row.scalars)).catch((error: unknown) =>
                log(`--logger ${flags.logger}: ${error instanceof Error ? error.message : String(error)}`),
              );
            }
          },
        });
        if (signal.aborted) {
          process.stderr.write(
            `stopped; resume with: agentmath train rl --resume --out ${folder} (same options)\n`,
          );
        }
        if (flags.json) process.stdout.write(`${JSON.stringify(metrics, null, 2)}\n`);
      } catch (error) {
        // Whatever failed (a trainer or every engine gone), the committed steps are kept.
        if (existsSync(join(folder, 'checkpoint.json')) || existsSync(join(folder, 'config.json'))) {
          log(
            `train rl stopped; committed steps are kept — continue with: agentmath train rl --resume --out ${folder} (same options)`,
          );
        }
        throw error;
      } finally {
        unregisterParts();
        await stopParts();
        await logger?.close();
        release();
        unregisterLock();
        await releaseLock();
      }
    });
}

const percent = (value: number | null) => (value === null ? '–' : `${(100 * value).toFixed(1)}%`);

export function formatRlEvent(event: RlEvent): string {
  switch (event.type) {
    case 'rl-start':
      return (
        `train rl: ${event.config.textOnly ? 'text-only' : 'with tools'} from ${event.config.init}` +
        ` (${event.parameters ?? '?'} parameters, learning rate ${event.learningRate}) → ${event.folder}` +
        (event.resumedFromStep > 0 ? `, resuming at step ${event.resumedFromStep}` : '') +
        `\nconfig: ${JSON.stringify(event.config)}\n`
      );
    case 'rl-step': {
      const m = event.metrics;
      return (
        `step ${m.step}: reward ${m.rewardMean?.toFixed(3) ?? '–'}, accuracy ${percent(m.accuracy)}, ` +
        `code ${percent(m.codeFrequency)}, tokens ${m.responseTokensMean?.toFixed(0) ?? '–'}, ` +
        `kept ${m.groupsKept}/dropped ${m.groupsDropped}, policy v${m.policyVersion}, ` +
        `rollout ${(m.rolloutMs / 1000).toFixed(1)} s, train ${(m.trainMs / 1000).toFixed(1)} s` +
        (m.weightSyncMs > 0 ? `, sync ${(m.weightSyncMs / 1000).toFixed(1)} s` : '') +
        `, idle engines ${(m.engineIdleMs / 1000).toFixed(1)} s / trainer ${(m.trainerIdleMs / 1000).toFixed(1)} s` +
        (m.stalenessMax === null
          ? ''
          : `, staleness ≤ ${m.stalenessMax} (mean ${m.stalenessMean?.toFixed(2)})`) +
        '\n'
      );
    }
    case 'rl-sync':
      return `weights v${event.sync.policyVersion} → engines: ${(event.sync.totalMs / 1000).toFixed(2)} s (export ${(event.sync.exportMs / 1000).toFixed(2)} s, paused ${(event.sync.pausedMs / 1000).toFixed(2)} s)\n`;
    case 'rl-eval':
      return `eval after step ${event.record.step}: held-out accuracy ${percent(event.record.accuracy)}, code ${percent(event.record.codeFrequency)}\n`;
    case 'rl-end':
      return (
        `train rl: ${event.reason} after ${event.steps} step(s) this run` +
        (event.steps > 0
          ? ` in ${(event.wallMs / 1000).toFixed(1)} s (${(event.wallMs / 1000 / event.steps).toFixed(1)} s a step)`
          : '') +
        ` → ${event.folder}\n`
      );
  }
}
