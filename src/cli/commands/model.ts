/** `agentmath model init`: a random-init Hugging Face model with a tokenizer (src/train/init-hf-model.ts). */
import { type Command, Option } from 'commander';
import { initHfModel, MODEL_ARCHITECTURES, type ModelArchitecture } from '../../train/index.ts';
import { integerOption } from '../cli-options.ts';

type ModelInitFlags = {
  arch: ModelArchitecture;
  out: string;
  layers: number;
  hidden: number;
  vocabSize: number;
  seed: number;
  force?: boolean;
  heads?: number;
  kvHeads?: number;
  intermediate?: number;
  embeddingRows?: number;
};

export function registerModel(program: Command): void {
  const model = program.command('model').description('Hugging Face models for the real training path');
  model
    .command('init')
    .description('a random-init model (real architecture, small size) with a BPE tokenizer and chat template')
    .addOption(new Option('--arch <name>', 'architecture').choices(MODEL_ARCHITECTURES).makeOptionMandatory())
    .requiredOption(
      '--out <dir>',
      'the model folder to write: new, empty, or a model this command wrote (then replaced)',
    )
    .option('--layers <n>', 'decoder layers', integerOption({ min: 1, max: 64 }), 2)
    .option(
      '--hidden <h>',
      'hidden size (a multiple of 16)',
      integerOption({ min: 32, max: 8192, multipleOf: 16 }),
      64,
    )
    .option('--vocab-size <n>', 'BPE vocabulary size', integerOption({ min: 300, max: 200_000 }), 1024)
    .option('--seed <s>', 'seed of the initial weights', integerOption(), 0)
    .option('--force', 'replace --out even when it holds files this command did not write')
    .option('--heads <n>', 'attention heads (default hidden / 16)', integerOption({ min: 1 }))
    .option('--kv-heads <n>', 'key-value heads (default heads / 2)', integerOption({ min: 1 }))
    .option('--intermediate <n>', 'MLP width (default 3 × hidden)', integerOption({ min: 1 }))
    .option(
      '--embedding-rows <n>',
      "the model's vocabulary when larger than the tokenizer's (padded rows, as real models have)",
      integerOption({ min: 1 }),
    )
    .action(async (flags: ModelInitFlags) => {
      const result = await initHfModel(flags);
      process.stdout.write(
        `${result.arch}: ${result.parameters.toLocaleString('en-US')} parameters, vocabulary ${result.vocabSize}, ` +
          `${result.layers} layers × ${result.hidden} → ${result.out}\n`,
      );
    });
}
