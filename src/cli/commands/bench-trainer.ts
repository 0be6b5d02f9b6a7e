/** `agentmath bench trainer`: the distributed trainer's speed, memory and batch transfer (src/bench/trainer-bench.ts). */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { batchLengths, renderTrainerBench, runTrainerBench } from '../../bench/trainer-bench.ts';
import { renderTrainerModelBench, runTrainerModelBench } from '../../bench/trainer-model-bench.ts';
import { initHfModel } from '../../model/index.ts';
import { integerOption, listOption } from '../cli-options.ts';
import {
  assertTrainerCapacity,
  CAPACITY_OVERRIDE,
  CAPACITY_OVERRIDE_HELP,
} from '../trainer-capacity-check.ts';
import {
  addTrainerMemoryOptions,
  isMemoryMode,
  runTrainerMemoryMode,
  type TrainerMemoryFlags,
} from './bench-trainer-memory.ts';

type TrainerBenchFlags = {
  model?: string;
  processes?: number[];
  steps: number;
  sequences: number;
  maxSequenceTokens: number;
  microBatchTokens: number;
  hidden: number;
  layers: number;
  json?: boolean;
  /** false with --no-capacity-check. */
  capacityCheck?: boolean;
} & TrainerMemoryFlags;

export function registerTrainerBench(bench: Command): void {
  const command = bench.command('trainer');
  addTrainerMemoryOptions(command)
    .description(
      'distributed trainer: SFT and GRPO step tokens/s for 1 vs P processes, peak memory per parameter, packed vs padded real-token share, batch transfer at paper scale',
    )
    .option(
      '--model <dir>',
      'Hugging Face model folder, compared with a plain PyTorch loop on the same batches (default: a random-init Qwen3 made for the run)',
    )
    .option('--hidden <h>', 'hidden size of the default model', integerOption({ min: 32, max: 4096 }), 256)
    .option('--layers <n>', 'layers of the default model', integerOption({ min: 1, max: 64 }), 4)
    .option(
      '--processes <list>',
      'process counts to compare (the first is the baseline; default 1,2, none with --model)',
      listOption(integerOption({ min: 1, max: 64 })),
    )
    .option('--steps <n>', 'measured steps per kind (after one warmup step)', integerOption({ min: 1 }), 5)
    .option('--sequences <n>', 'sequences per step', integerOption({ min: 1 }), 16)
    .option(
      '--max-sequence-tokens <n>',
      'longest sequence (lengths are long-tailed)',
      integerOption({ min: 16 }),
      512,
    )
    .option('--micro-batch-tokens <n>', 'packed micro-batch budget', integerOption({ min: 16 }), 1024)
    .option('--json', 'print the report as JSON')
    .option(CAPACITY_OVERRIDE, CAPACITY_OVERRIDE_HELP)
    .action(async (flags: TrainerBenchFlags) => {
      if (isMemoryMode(flags)) return runTrainerMemoryMode(flags, command);
      const scratch =
        flags.model === undefined ? await mkdtemp(join(tmpdir(), 'agentmath-bench-trainer-')) : null;
      try {
        const model = flags.model ?? join(scratch as string, 'qwen3');
        if (flags.model === undefined) {
          process.stderr.write(`model init --arch qwen3 --hidden ${flags.hidden} --layers ${flags.layers}\n`);
          await initHfModel({ arch: 'qwen3', out: model, hidden: flags.hidden, layers: flags.layers });
        }
        assertTrainerCapacity({
          processes: Math.max(...(flags.processes ?? [1])),
          model,
          flag: '--processes',
          check: flags.capacityCheck,
        });
        const onProgress = (message: string) => process.stderr.write(`${message}\n`);
        if (flags.model !== undefined) {
          const sideBySide = await runTrainerModelBench({
            model,
            steps: flags.steps,
            lengths: batchLengths(flags.sequences, flags.maxSequenceTokens, 'trainer-bench'),
            microBatchTokens: flags.microBatchTokens,
            onProgress,
          });
          process.stdout.write(
            flags.json ? `${JSON.stringify(sideBySide, null, 2)}\n` : renderTrainerModelBench(sideBySide),
          );
          if (flags.processes === undefined) return;
        }
        const report = await runTrainerBench({
          model,
          processes: flags.processes ?? [1, 2],
          steps: flags.steps,
          sequences: flags.sequences,
          maxSequenceTokens: flags.maxSequenceTokens,
          microBatchTokens: flags.microBatchTokens,
          onProgress,
        });
        process.stdout.write(
          flags.json ? `${JSON.stringify(report, null, 2)}\n` : renderTrainerBench(report),
        );
      } finally {
        if (scratch !== null) await rm(scratch, { recursive: true, force: true });
      }
    });
}
