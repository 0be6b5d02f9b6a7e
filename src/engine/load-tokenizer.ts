/**
 * `loadTokenizer(dir)`: reads a Hugging Face tokenizer folder (`tokenizer.json`,
 * `tokenizer_config.json`, optionally `chat_template.jinja`) into a Tokenizer. The embedded
 * byte-level tokenizer and Qwen2.5/Llama-3 style tokenizers load the same way.
 */
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { stripBom } from '../shared/text-input.ts';
import { HfTokenizer } from './hf-tokenizer.ts';
import { TokenizerError } from './tokenizer-errors.ts';

/** Loads the tokenizer in `dir`; errors name the file and field at fault. */
export async function loadTokenizer(dir: string): Promise<HfTokenizer> {
  const tokenizerJson = await readTokenizerFile(join(dir, 'tokenizer.json'));
  const tokenizerConfig = await readTokenizerFile(join(dir, 'tokenizer_config.json'));
  const chatTemplate = await readFile(join(dir, 'chat_template.jinja'), 'utf8').catch(() => null);
  return new HfTokenizer({ tokenizerJson, tokenizerConfig, chatTemplate, name: basename(dir), where: dir });
}

/** The JSON of a tokenizer file; a missing or malformed one is `TOKENIZER_INVALID` naming the file. */
export async function readTokenizerFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new TokenizerError('TOKENIZER_INVALID', `${path}: cannot read (${(error as Error).message})`, {
      cause: error,
    });
  }
  try {
    return JSON.parse(stripBom(text));
  } catch (error) {
    throw new TokenizerError('TOKENIZER_INVALID', `${path}: not JSON (${(error as Error).message})`, {
      cause: error,
    });
  }
}
