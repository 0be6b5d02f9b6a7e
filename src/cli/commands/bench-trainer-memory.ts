/** `agentmath bench trainer --vocab-size V --tokens T`: the LM head's memory, chunked against full logits (src/bench/trainer-memory-bench.ts). */
import type { Command } from 'commander';
import { renderTrainerMemoryBench, runTrainerMemoryBench } from '../../bench/trainer-memory-bench.ts';
import { integerOption, usageError } from '../cli-options.ts';

export type TrainerMemoryFlags = {
  vocabSize?: number;
  tokens?: number;
  logitsChunkTokens: number;
  model?: string;
  hidden: number;
  layers: number;
  json?: boolean;
};

/** Adds the memory mode's options to `bench trainer`. */
export function addTrainerMemoryOptions(command: Command): Command {
  return command
    .option(
      '--vocab-size <v>',
      'memory mode: vocabulary of the random-init model (default 151936 with --tokens)',
      integerOption({ min: 2 }),
    )
    .option(
      '--tokens <n>',
      'memory mode: one GRPO step of one sequence this long, chunked LM head vs full logits, each in its own process',
      integerOption({ min: 16 }),
    )
    .option(
      '--logits-chunk-tokens <n>',
      'memory mode: tokens per LM-head chunk',
      integerOption({ min: 1 }),
      512,
    );
}

/** Whether the flags ask for the memory mode. */
export function isMemoryMode(flags: TrainerMemoryFlags): boolean {
  return flags.tokens !== undefined || flags.vocabSize !== undefined;
}

/** The memory mode: both LM-head paths' peak resident memory, side by side. Its model is
 * tiny unless --hidden/--layers are given (hidden 64, 2 layers: the LM head dominates). */
export async function runTrainerMemoryMode(flags: TrainerMemoryFlags, command: Command): Promise<void> {
  const given = (name: string) => command.getOptionValueSource(name) !== 'default';
  if (flags.tokens === undefined) throw usageError('--vocab-size needs --tokens (the memory mode)');
  if (flags.model !== undefined)
    throw usageError('--tokens measures a random-init model of --vocab-size and --hidden; drop --model');
  const report = await runTrainerMemoryBench({
    vocabSize: flags.vocabSize ?? 151_936,
    tokens: flags.tokens,
    hidden: given('hidden') ? flags.hidden : 64,
    layers: given('layers') ? flags.layers : 2,
    logitsChunkTokens: flags.logitsChunkTokens,
    onProgress: (message) => process.stderr.write(`${message}\n`),
  });
  process.stdout.write(
    flags.json ? `${JSON.stringify(report, null, 2)}\n` : renderTrainerMemoryBench(report),
  );
}
