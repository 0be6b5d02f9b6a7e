/**
 * Which trainer a model folder is for, decided by its `config.json` alone: a `model_type` other
 * than the embedded byte model's is a Hugging Face model (the distributed trainer), whatever
 * other files happen to be there. A Hugging Face folder then needs its tokenizer files; one
 * that lacks them is refused naming the file, instead of failing later in `transformers` with
 * an unrelated message (a slow-tokenizer conversion asking for sentencepiece).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentMathError } from '../shared/agentmath-error.ts';

/** The embedded byte model's `model_type`: its saved folders also hold config.json and tokenizer.json. */
const BYTE_MODEL_TYPE = 'agentmath-byte-gpt';

/** The files the project reads from a Hugging Face folder besides the weights (`loadTokenizer`). */
export const HF_TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'] as const;

/** The folder's `model_type`, or null without a readable config.json. */
function modelType(path: string): string | null {
  try {
    const body = JSON.parse(readFileSync(join(path, 'config.json'), 'utf8')) as { model_type?: unknown };
    return typeof body.model_type === 'string' ? body.model_type : null;
  } catch {
    return null;
  }
}

/** Whether a folder holds a Hugging Face model: config.json whose model_type is not the byte model's. */
export function isHuggingFaceModelFolder(path: string): boolean {
  const type = modelType(path);
  return type !== null && type !== BYTE_MODEL_TYPE;
}

/** Throws `MODEL_FOLDER_INCOMPLETE` naming the tokenizer files a Hugging Face folder lacks. */
export function assertHuggingFaceTokenizerFiles(path: string, option = '--model'): void {
  const missing = HF_TOKENIZER_FILES.filter((name) => !existsSync(join(path, name)));
  if (missing.length === 0) return;
  throw new AgentMathError(
    'MODEL_FOLDER_INCOMPLETE',
    `${path} (${option}): a Hugging Face model (config.json model_type ${JSON.stringify(modelType(path))}) without ` +
      `${missing.join(' and ')}; copy the tokenizer files from where the model came from (the project reads the ` +
      'fast tokenizer only)',
  );
}
