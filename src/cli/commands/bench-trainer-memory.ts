/** `agentmath bench trainer --vocab-size V --tokens T`: the LM head's memory, chunked against full logits
 * (src/bench/trainer-memory-bench.ts); with `--packed-sequences N`, attention's memory on a packed row,
 * sdpa's dense mask against varlen attention (src/bench/trainer-attention-bench.ts). */
import type { Command } from 'commander';
import {
  renderTrainerAttentionBench,
  runTrainerAttentionBench,
} from '../../bench/trainer-attention-bench.ts';
import { renderTrainerMemoryBench, runTrainerMemoryBench } from '../../bench/trainer-memory-bench.ts';
import { integerOption, usageError } from '../cli-options.ts';

export type TrainerMemoryFlags = {
  vocabSize?: number;
  tokens?: number;
  logitsChunkTokens: number;
  packedSequences?: number;
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
    )
    .option(
      '--packed-sequences <n>',
      "memory mode: N sequences packed in the --tokens row, transformers' sdpa (dense [T × T] mask) vs varlen attention, each in its own process (--vocab-size default 1024 here)",
      integerOption({ min: 1 }),
    );
}

/** Whether the flags ask for the memory mode. */
export function isMemoryMode(flags: TrainerMemoryFlags): boolean {
  return flags.tokens !== undefined || flags.vocabSize !== undefined || flags.packedSequences !== undefined;
}

/** The memory mode: both LM-head paths' peak resident memory, side by side, or with
 * --packed-sequences both attention paths'. Its model is tiny unless --hidden/--layers are
 * given (hidden 64, 2 layers: the LM head, or attention, dominates). */
export async function runTrainerMemoryMode(flags: TrainerMemoryFlags, command: Command): Promise<void> {
  const given = (name: string) => command.getOptionValueSource(name) !== 'default';
  if (flags.tokens === undefined)
    throw usageError(
      `${flags.packedSequences !== undefined ? '--packed-sequences' : '--vocab-size'} needs --tokens (the memory mode)`,
    );
  if (flags.model !== undefined)
    throw usageError('--tokens measures a random-init model of --vocab-size and --hidden; drop --model');
  const onProgress = (message: string) => process.stderr.write(`${message}\n`);
  if (flags.packedSequences !== undefined) {
    if (flags.tokens < 2 * flags.packedSequences)
      throw usageError(
        `--tokens ${flags.tokens} cannot hold --packed-sequences ${flags.packedSequences} (2 tokens each at least)`,
      );
    const report = await runTrainerAttentionBench({
      tokens: flags.tokens,
      sequences: flags.packedSequences,
      vocabSize: flags.vocabSize ?? 1024,
      hidden: given('hidden') ? flags.hidden : 64,
      layers: given('layers') ? flags.layers : 2,
      logitsChunkTokens: flags.logitsChunkTokens,
      onProgress,
    });
    process.stdout.write(
      flags.json ? `${JSON.stringify(report, null, 2)}\n` : renderTrainerAttentionBench(report),
    );
    return;
  }
  const report = await runTrainerMemoryBench({
    vocabSize: flags.vocabSize ?? 151_936,
    tokens: flags.tokens,
    hidden: given('hidden') ? flags.hidden : 64,
    layers: given('layers') ? flags.layers : 2,
    logitsChunkTokens: flags.logitsChunkTokens,
    onProgress,
  });
  process.stdout.write(
    flags.json ? `${JSON.stringify(report, null, 2)}\n` : renderTrainerMemoryBench(report),
  );
}
