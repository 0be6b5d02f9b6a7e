/**
 * `train sft --model HF_DIR`: the flags of `train sft` applied to a Hugging Face model on the
 * distributed trainer (src/train/hf-sft-run.ts); progress lines to stderr, a summary to stdout.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import type { PromptBuilderName } from '../../agent/index.ts';
import { assertHuggingFaceTokenizerFiles } from '../../model/index.ts';
import { countNoun } from '../../shared/count-noun.ts';
import { readRunConfigFile } from '../../shared/run-config-file.ts';
import { assertNotAFile } from '../../shared/run-folder-check.ts';
import {
  HF_SFT_LEARNING_RATE,
  type HfSftConfig,
  type HfSftEvent,
  hfSftWarmupSteps,
  runHfSft,
  savedRunSteps,
} from '../../train/index.ts';
import { usageError } from '../cli-options.ts';
import { holdSignals, interruptSignal } from '../process-lifecycle.ts';
import { resumeCommand } from '../resume-command.ts';
import { assertTrainerCapacity } from '../trainer-capacity-check.ts';

export type HfSftFlags = {
  model: string;
  data?: string;
  out?: string;
  resume?: boolean;
  steps: number;
  minutes?: number;
  batchSize: number;
  learningRate?: number;
  warmupSteps?: number;
  checkpointEvery: number;
  seed: number;
  nproc: number;
  microBatchTokens: number;
  maxSequenceTokens: number;
  activationCheckpointing?: boolean;
  sp: number;
  cpuOffload?: boolean;
  prompt: PromptBuilderName;
  dialect?: 'tags' | 'markdown';
  json?: boolean;
  /** false with --no-capacity-check. */
  capacityCheck?: boolean;
};

/** Config field → the flag that sets it (model and data are checked by the run itself). */
const FLAG_OF: Partial<Record<keyof HfSftConfig, string>> = {
  model: 'model',
  data: 'data',
  processes: 'nproc',
  batchSize: 'batchSize',
  learningRate: 'learningRate',
  warmupSteps: 'warmupSteps',
  checkpointEvery: 'checkpointEvery',
  microBatchTokens: 'microBatchTokens',
  activationCheckpointing: 'activationCheckpointing',
  sequenceParallel: 'sp',
  cpuOffload: 'cpuOffload',
  maxSequenceTokens: 'maxSequenceTokens',
  prompt: 'prompt',
  dialect: 'dialect',
  seed: 'seed',
};

/** One progress line of a `train sft --model` run (null: nothing to say). */
export function formatHfSftEvent(event: HfSftEvent): string | null {
  switch (event.type) {
    case 'data-ready':
      return `data: ${event.examples} examples, mean ${event.meanTokens.toFixed(0)} tokens${event.droppedTooLong ? `, ${event.droppedTooLong} longer than ${event.limit} left out` : ''}`;
    case 'trainer-ready':
      return `trainer: ${event.parameters.toLocaleString('en-US')} parameters, ${event.worldSize} process(es) on ${event.device} (${event.url})`;
    case 'resumed':
      return `resumed from step ${event.step} (${event.checkpoint})`;
    case 'schedule':
      return event.reason === 'minutes'
        ? `schedule: ${countNoun(event.totalSteps, 'step')} fit --minutes`
        : `schedule: ${countNoun(event.totalSteps, 'step')}`;
    case 'train-step':
      return (
        `step ${event.step}/${event.totalSteps}  loss ${event.loss.toFixed(4)}  lr ${event.learningRate.toExponential(2)}  ` +
        `grad ${event.gradNorm.toFixed(3)}  ${event.tokensTrained}/${event.tokensTotal} tokens trained  ` +
        `${(event.stepMs / 1000).toFixed(1)} s  ${event.tokensTotalPerSecond.toFixed(0)} tokens/s` +
        `${event.skipped ? '  (skipped: non-finite gradient)' : ''}`
      );
    case 'checkpoint-saved':
      return `checkpoint: step ${event.step} → ${event.path}`;
    case 'model-exported':
      return `model (Hugging Face layout): ${event.path}`;
  }
}

/**
 * The run's configuration from the flags: a pretrained model's defaults where a flag was not
 * given (learning rate 5e-5, warmup a tenth of the steps; the byte model's are in sft-config.ts).
 */
export function hfSftConfigOf(flags: HfSftFlags): HfSftConfig {
  return {
    model: flags.model,
    data: flags.data ?? '',
    processes: flags.nproc,
    steps: flags.steps,
    maxMinutes: flags.minutes ?? null,
    batchSize: flags.batchSize,
    learningRate: flags.learningRate ?? HF_SFT_LEARNING_RATE,
    warmupSteps: flags.warmupSteps ?? hfSftWarmupSteps(flags.steps),
    minLearningRateRatio: 0.1,
    checkpointEvery: flags.checkpointEvery,
    microBatchTokens: flags.microBatchTokens,
    activationCheckpointing: flags.activationCheckpointing === true,
    sequenceParallel: flags.sp,
    cpuOffload: flags.cpuOffload === true,
    maxSequenceTokens: flags.maxSequenceTokens,
    prompt: flags.prompt,
    dialect: flags.dialect ?? 'tags',
    seed: flags.seed,
  };
}

export async function runHfSftCommand(flags: HfSftFlags, command: Command): Promise<void> {
  for (const flag of [
    'textOnly',
    'unmasked',
    'task',
    'problems',
    'levels',
    'threads',
    'evalProblems',
    'toolShare',
  ]) {
    if (command.getOptionValueSource(flag) === 'cli') {
      throw usageError(
        `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} applies to the embedded model, not to --model HF_DIR`,
      );
    }
  }
  if (flags.out === undefined) throw usageError('--model HF_DIR needs --out (the run folder)');
  assertNotAFile(resolve(flags.out));
  if (flags.data === undefined && !flags.resume) {
    throw usageError(
      '--model HF_DIR needs --data FILE (trajectories.jsonl, sharegpt.json, verl.parquet or a tasks write-arith JSONL)',
    );
  }
  const config = hfSftConfigOf(flags);
  const savedPath = join(flags.out, 'config.json');
  if (flags.resume && existsSync(savedPath)) {
    // A resume continues with the saved configuration; flags given on the command line are
    // checked against it by the run (a change is refused), except --steps and --minutes, which
    // size the rest of the run.
    const saved = (await readRunConfigFile(savedPath)) as HfSftConfig;
    for (const key of Object.keys(config) as (keyof HfSftConfig)[]) {
      if (key === 'steps' || key === 'maxMinutes') continue;
      const flag = FLAG_OF[key];
      if ((flag === undefined || command.getOptionValueSource(flag) !== 'cli') && key in saved) {
        (config as Record<string, unknown>)[key] = saved[key];
      }
    }
    if (command.getOptionValueSource('steps') !== 'cli')
      config.steps = (await savedRunSteps(flags.out)) ?? config.steps;
  }
  if (config.processes % config.sequenceParallel !== 0) {
    throw usageError(`--sp ${config.sequenceParallel}: must divide --nproc ${config.processes}`);
  }
  assertHuggingFaceTokenizerFiles(config.model);
  assertTrainerCapacity({
    processes: config.processes,
    model: config.model,
    flag: '--nproc',
    check: flags.capacityCheck,
  });
  const release = holdSignals();
  try {
    const result = await runHfSft({
      out: flags.out,
      resume: flags.resume === true,
      config,
      onEvent: (event) => {
        const line = formatHfSftEvent(event);
        if (line !== null) process.stderr.write(`${line}\n`);
      },
      signal: interruptSignal(),
    });
    if (result.status === 'stopped') {
      // A stop asked for by a signal is not a failure: main.ts re-raises the signal.
      process.stderr.write(
        `stopped at step ${result.step}/${result.totalSteps} (checkpoint ${result.checkpoint}); resume with:\n` +
          `  ${resumeCommand(process.argv.slice(2), resolve(flags.out))}\n`,
      );
      return;
    }
    process.stdout.write(
      flags.json
        ? `${JSON.stringify(result, null, 2)}\n`
        : `trained ${countNoun(result.steps, 'step')}, final loss ${result.finalLoss?.toFixed(4) ?? 'n/a'}; model: ${result.model}\n`,
    );
  } finally {
    release();
  }
}
