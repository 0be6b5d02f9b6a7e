/**
 * `agentmath train rl`: agentic RL (GRPO over the rollout system) from the model folder
 * `--model` names (any model: the project's byte model or a Hugging Face one), on engine
 * replicas (started here, or `--engine URL …`) with the trainer (started here, under torchrun
 * with more than one process, or `--trainer URL`), weights synced after each step. Progress on stderr,
 * one line per step; `--json` prints the step metrics as JSON on stdout at the end. A stop
 * prints the command that resumes; `--resume` takes the saved run's options for those not
 * given. Wiring only: the options are `train-rl-options.ts`, the loop `src/train/rl-run.ts`,
 * the parts `src/train/rl-start-parts.ts`.
 */
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { Command } from 'commander';
import {
  assertHuggingFaceTokenizerFiles,
  embeddedModelPaths,
  isHuggingFaceModelFolder,
  modelFolderIssue,
} from '../../model/index.ts';
import { assertRunIdentity, readCheckpoint } from '../../rollout/index.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { countNoun } from '../../shared/count-noun.ts';
import { readRunConfigFile } from '../../shared/run-config-file.ts';
import { checkRunFolder } from '../../shared/run-folder-check.ts';
import { acquireRunFolderLock } from '../../shared/run-folder-lock.ts';
import {
  isMeasuredEval,
  type MetricsLogger,
  metricScalars,
  openMetricsLogger,
  RL_PRESET_NAMES,
  RL_PRESETS,
  type RlConfig,
  type RlConfigInput,
  type RlEvent,
  type RlParts,
  type RlPresetName,
  resolveRlConfig,
  rlDefiningConfig,
  runRl,
  startRlParts,
} from '../../train/index.ts';
import { choiceOption, numberOption, usageError } from '../cli-options.ts';
import { holdSignals, interruptSignal, onShutdown } from '../process-lifecycle.ts';
import { resumeCommand } from '../resume-command.ts';
import {
  assertTrainerCapacity,
  CAPACITY_OVERRIDE,
  CAPACITY_OVERRIDE_HELP,
} from '../trainer-capacity-check.ts';
import { addRlConfigFlags, flagOfField, rlConfigInput } from './train-rl-options.ts';

/** The options that configure the command, not the run (the run's are `train-rl-options.ts`). */
type RlCommandFlags = {
  /** false with --no-capacity-check. */
  capacityCheck?: boolean;
  preset?: RlPresetName;
  logger?: 'tensorboard' | 'wandb';
  minutes?: number;
  out?: string;
  resume?: boolean;
  json?: boolean;
};

/**
 * What `train rl` may leave in its folder before the run's config.json exists (a start that
 * failed after the trainer or the engines began): such a folder is not another job's.
 */
const START_LEFTOVERS = [
  'checkpoints',
  'syncs.jsonl',
  'model',
  'policy',
  'tensorboard',
  'wandb',
  'decontamination.json',
] as const;

function describePreset(name: RlPresetName): string {
  return Object.entries(RL_PRESETS[name])
    .map(([field, value]) => `${flagOfField(field as keyof RlConfigInput)} ${value}`)
    .join(', ');
}

/** The run's configuration from the command line (and, on `--resume`, the saved run's). */
async function configOf(command: Command, flags: RlCommandFlags, folder: string): Promise<RlConfig> {
  const savedPath = join(folder, 'config.json');
  const saved =
    flags.resume === true && existsSync(savedPath)
      ? ((await readRunConfigFile(savedPath)) as Record<string, unknown>)
      : null;
  const { input } = rlConfigInput(command, { ...(flags.preset ? { preset: flags.preset } : {}), saved });
  if (input.data != null && input.bench != null)
    throw usageError('--data and --bench both name the training problems: give one');
  const paths = embeddedModelPaths();
  const init = resolve(input.init ?? (input.textOnly === true ? paths.text : paths.tool));
  const issue = modelFolderIssue(init);
  if (issue !== null)
    throw new AgentMathError(
      'INPUT_NOT_FOUND',
      issue === 'no such folder'
        ? `model folder ${init} (--model) does not exist`
        : `--model ${init}: ${issue}`,
    );
  return resolveRlConfig({ ...input, init });
}

export function registerTrainRl(train: Command): void {
  const command = train
    .command('rl')
    .description(
      'agentic RL (GRPO, interpreter tokens masked) from an SFT model, on engine replicas with the trainer',
    );
  addRlConfigFlags(command)
    .option(
      '--preset <name>',
      `defaults for a setting; cpu: a pretrained --model on a few CPU cores (${describePreset('cpu')}); flags given win`,
      choiceOption(RL_PRESET_NAMES),
    )
    .option(CAPACITY_OVERRIDE, `with a Hugging Face --model: ${CAPACITY_OVERRIDE_HELP}`)
    .option(
      '--logger <kind>',
      'also log the step metrics to tensorboard or wandb',
      choiceOption(['tensorboard', 'wandb'] as const),
    )
    .option(
      '--minutes <m>',
      'stop at a step boundary after M minutes (resumable)',
      numberOption({ min: 0, minExclusive: true }),
    )
    .option('--out <dir>', 'run folder (default runs/rl-<tool|text>-<time>)')
    .option(
      '--resume',
      'continue the run in --out after a stop or a kill (options not given are the saved run’s)',
    )
    .option('--json', 'print the metrics of every step as JSON on stdout')
    .action(async (flags: RlCommandFlags, command: Command) => {
      const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
      const textOnly = command.getOptionValue('textOnly') === true;
      const folder = resolve(flags.out ?? `runs/rl-${textOnly ? 'text' : 'tool'}-${stamp}`);
      // Checked before anything starts or is written: a refusal leaves nothing running.
      checkRunFolder({
        folder,
        marker: 'config.json',
        resume: flags.resume === true,
        command: 'train rl',
        leftovers: START_LEFTOVERS,
      });
      const config = await configOf(command, flags, folder);
      if (isHuggingFaceModelFolder(config.init)) assertHuggingFaceTokenizerFiles(config.init, '--model');
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
      const resumeHint = resumeCommand(process.argv.slice(2), folder);
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
                : event.type === 'rl-eval' && isMeasuredEval(event.record)
                  ? { step: event.record.step, scalars: metricScalars({ eval: event.record }) }
                  : null;
            if (logger !== null && row !== null) {
              Promise.resolve(logger.log(row.step, row.scalars)).catch((error: unknown) =>
                log(`--logger ${flags.logger}: ${error instanceof Error ? error.message : String(error)}`),
              );
            }
          },
        });
        if (signal.aborted) process.stderr.write(`stopped; resume with:\n  ${resumeHint}\n`);
        if (flags.json) process.stdout.write(`${JSON.stringify(metrics, null, 2)}\n`);
      } catch (error) {
        // Whatever failed (a trainer or every engine gone), the committed steps are kept.
        if (existsSync(join(folder, 'checkpoint.json')) || existsSync(join(folder, 'config.json'))) {
          log(`train rl stopped; committed steps are kept; continue with:\n  ${resumeHint}`);
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
        '\n' +
        (m.groupsKept === 0 && m.groupsDropped === 0 && event.rollout.trajectoriesParked > 0
          ? `  nothing trained: no group finished in this step; its ${countNoun(event.rollout.trajectoriesParked, 'trajectory', 'trajectories')} parked for their next segment go on in the next step (--partial-rollouts 1 finishes each within its step)\n`
          : '')
      );
    }
    case 'rl-sync':
      return `weights v${event.sync.policyVersion} → engines: ${(event.sync.totalMs / 1000).toFixed(2)} s (export ${(event.sync.exportMs / 1000).toFixed(2)} s, paused ${(event.sync.pausedMs / 1000).toFixed(2)} s)\n`;
    case 'rl-eval':
      return isMeasuredEval(event.record)
        ? `eval after step ${event.record.step}: held-out accuracy ${percent(event.record.accuracy)} of ${countNoun(event.record.problems, 'problem')}, code ${percent(event.record.codeFrequency)}\n`
        : `eval after step ${event.record.step}: missing (${event.record.missing})\n`;
    case 'rl-end':
      return (
        `train rl: ${event.reason} after ${countNoun(event.steps, 'step')} this run` +
        (event.steps > 0
          ? ` in ${(event.wallMs / 1000).toFixed(1)} s (${(event.wallMs / 1000 / event.steps).toFixed(1)} s a step)`
          : '') +
        ` → ${event.folder}\n`
      );
  }
}
