/**
 * `agentmath model import --gguf FILE --out DIR`: a GGUF file (any architecture transformers
 * reads) as an ordinary Hugging Face model folder, by `agentmath_train.import_gguf` in the
 * project's `.venv`. Bad input (a missing, truncated or non-GGUF file, an architecture
 * transformers cannot build as a causal LM, an `--out` holding other files) is refused before
 * anything is written: `ModelImportRefused` (code `MODEL_IMPORT_REFUSED`, exit 2), whose message
 * names the file or folder. An import into an earlier import's folder replaces only the files
 * that import wrote; the user's own files there stay. The Python child never outlives the caller.
 */
import { resolve } from 'node:path';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { runTrainerModule } from './trainer-module-run.ts';

/** How the Python side prefixes a refusal on stderr (exit 2). */
const REFUSAL_PREFIX = 'agentmath_train import-gguf: ';

export const IMPORT_DTYPES = ['float32', 'bfloat16'] as const;
export type ImportDtype = (typeof IMPORT_DTYPES)[number];

/**
 * The file each imported folder carries, written last: the files the import wrote (name → bytes),
 * its source and dtype. A folder with it may be imported into again (only those files change).
 */
export const IMPORT_MARKER_FILE = 'agentmath-import.json';

export type ImportGgufOptions = {
  gguf: string;
  out: string;
  /** float32 (default) keeps the de-quantized weights exactly; bfloat16 halves the folder. */
  dtype?: ImportDtype;
  /** Where the file came from, recorded in the folder (default: its path). */
  source?: string;
  /** Aborting it stops the import; nothing is left half-written (`ModelCommandStopped`). */
  signal?: AbortSignal;
};

export type ImportGgufResult = {
  out: string;
  architecture: string;
  modelType: string;
  parameters: number;
  vocabSize: number;
  dtype: ImportDtype;
  chatTemplate: boolean;
  /** Entries of an earlier import's folder that the import did not write: the user's, left as they were. */
  kept: string[];
};

export const MODEL_IMPORT_REFUSED = 'MODEL_IMPORT_REFUSED';

/** Bad input found before anything was written (the command exits 2). */
export class ModelImportRefused extends AgentMathError {
  constructor(message: string) {
    super(MODEL_IMPORT_REFUSED, message);
  }
}

export async function importGgufModel(options: ImportGgufOptions): Promise<ImportGgufResult> {
  const { dtype = 'float32' } = options;
  const args = [
    'import-gguf',
    '--gguf',
    resolve(options.gguf),
    '--out',
    resolve(options.out),
    '--dtype',
    dtype,
  ];
  if (options.source !== undefined) args.push('--source', options.source);
  const outcome = await runTrainerModule({
    command: 'model import',
    args,
    ...(options.signal ? { signal: options.signal } : {}),
    timeoutMs: 1_800_000,
  });
  const lines = outcome.stderr.trim().split('\n');
  if (outcome.code === 0)
    return JSON.parse(outcome.stdout.trim().split('\n').at(-1) ?? '') as ImportGgufResult;
  const refusal = lines.find((line) => line.startsWith(REFUSAL_PREFIX));
  if (outcome.code === 2 && refusal !== undefined)
    throw new ModelImportRefused(refusal.slice(REFUSAL_PREFIX.length));
  throw new AgentMathError(
    'MODEL_IMPORT_FAILED',
    `model import --gguf ${options.gguf}: ${lines.slice(-3).join(' ') || `the importer exited with ${outcome.code ?? outcome.signal}`}`,
  );
}
