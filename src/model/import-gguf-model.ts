/**
 * `agentmath model import --gguf FILE --out DIR`: a GGUF file (any architecture transformers
 * reads) as an ordinary Hugging Face model folder, by `agentmath_train.import_gguf` in the
 * project's `.venv`. Bad input (a missing, truncated or non-GGUF file, an architecture
 * transformers cannot build as a causal LM, an `--out` holding other files) is refused before
 * anything is written: `ModelImportRefused`, whose message names the file or folder.
 */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { PROJECT_ROOT, trainerPython } from '../shared/python-environments.ts';

const run = promisify(execFile);

export const IMPORT_DTYPES = ['float32', 'bfloat16'] as const;
export type ImportDtype = (typeof IMPORT_DTYPES)[number];

/** The file each imported folder carries; a folder with it may be replaced by a new import. */
export const IMPORT_MARKER_FILE = 'agentmath-import.json';

export type ImportGgufOptions = {
  gguf: string;
  out: string;
  /** float32 (default) keeps the de-quantized weights exactly; bfloat16 halves the folder. */
  dtype?: ImportDtype;
  /** Where the file came from, recorded in the folder (default: its path). */
  source?: string;
};

export type ImportGgufResult = {
  out: string;
  architecture: string;
  modelType: string;
  parameters: number;
  vocabSize: number;
  dtype: ImportDtype;
  chatTemplate: boolean;
};

/** Bad input found before anything was written (the command exits 2). */
export class ModelImportRefused extends AgentMathError {
  constructor(message: string) {
    super('MODEL_IMPORT_REFUSED', message);
  }
}

export async function importGgufModel(options: ImportGgufOptions): Promise<ImportGgufResult> {
  const { dtype = 'float32' } = options;
  const args = ['-m', 'agentmath_train', 'import-gguf', '--gguf', resolve(options.gguf)];
  args.push('--out', resolve(options.out), '--dtype', dtype);
  if (options.source !== undefined) args.push('--source', options.source);
  try {
    const { stdout } = await run(trainerPython(), args, {
      env: {
        ...process.env,
        PYTHONPATH: join(PROJECT_ROOT, 'python'),
        HF_HUB_OFFLINE: '1',
        TQDM_DISABLE: '1',
      },
      timeout: 1_800_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as ImportGgufResult;
  } catch (error) {
    const failure = error as { code?: unknown; stderr?: string };
    const lines = (failure.stderr ?? '').trim().split('\n');
    const refusal = lines.find((line) => line.startsWith('agentmath_train import-gguf: '));
    if (failure.code === 2 && refusal !== undefined) {
      throw new ModelImportRefused(refusal.slice('agentmath_train import-gguf: '.length));
    }
    throw new AgentMathError(
      'MODEL_IMPORT_FAILED',
      `model import --gguf ${options.gguf}: ${lines.slice(-3).join(' ') || (error as Error).message}`,
      { cause: error },
    );
  }
}
