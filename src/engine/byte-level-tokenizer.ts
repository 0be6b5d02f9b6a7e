/**
 * The embedded model's byte-level tokenizer, described in Hugging Face files so that it loads
 * through the same code as any other: token id = byte value (0..255) of the UTF-8 text,
 * 256 = `<|endoftext|>` (EOS), 257 = `<|pad|>`, vocabulary size 258. In tokenizer.json it is
 * BPE with an empty merge list, a ByteLevel pre-tokenizer without regex split, and the GPT-2
 * byte → unicode table as vocabulary (the character for byte b has id b).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { byteToUnicode } from './byte-unicode-table.ts';
import { HfTokenizer } from './hf-tokenizer.ts';
import type { TokenizerConfigInput, TokenizerJsonInput } from './hf-tokenizer-files.ts';

export const BYTE_LEVEL_EOS_TOKEN = '<|endoftext|>';
export const BYTE_LEVEL_PAD_TOKEN = '<|pad|>';
export const BYTE_LEVEL_EOS_ID = 256;
export const BYTE_LEVEL_PAD_ID = 257;
export const BYTE_LEVEL_VOCAB_SIZE = 258;

/** The chat template of the embedded model: role markers are plain bytes, not special tokens. */
export const BYTE_LEVEL_CHAT_TEMPLATE =
  '{% for message in messages %}<|{{ message.role }}|>\n{{ message.content }}\n{% endfor %}' +
  '{% if add_generation_prompt %}<|assistant|>\n{% endif %}';

/** The contents of the embedded model's tokenizer.json and tokenizer_config.json. */
export function byteLevelTokenizerFiles(): {
  tokenizerJson: TokenizerJsonInput;
  tokenizerConfig: TokenizerConfigInput;
} {
  const vocab: Record<string, number> = {};
  for (let byte = 0; byte < 256; byte++) vocab[byteToUnicode(byte)] = byte;
  const special = (id: number, content: string) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  });
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      special(BYTE_LEVEL_EOS_ID, BYTE_LEVEL_EOS_TOKEN),
      special(BYTE_LEVEL_PAD_ID, BYTE_LEVEL_PAD_TOKEN),
    ],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: 'BPE' as const,
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: [],
    },
  };
  const tokenizerConfig = {
    tokenizer_class: 'PreTrainedTokenizerFast',
    model_max_length: 1_000_000,
    chat_template: BYTE_LEVEL_CHAT_TEMPLATE,
    eos_token: BYTE_LEVEL_EOS_TOKEN,
    pad_token: BYTE_LEVEL_PAD_TOKEN,
    bos_token: null,
    added_tokens_decoder: {
      [BYTE_LEVEL_EOS_ID]: { content: BYTE_LEVEL_EOS_TOKEN, special: true },
      [BYTE_LEVEL_PAD_ID]: { content: BYTE_LEVEL_PAD_TOKEN, special: true },
    },
  };
  return { tokenizerJson, tokenizerConfig };
}

/** Writes tokenizer.json and tokenizer_config.json of the byte-level tokenizer into `dir`. */
export async function writeByteLevelTokenizerFiles(dir: string): Promise<void> {
  const { tokenizerJson, tokenizerConfig } = byteLevelTokenizerFiles();
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'tokenizer.json'), `${JSON.stringify(tokenizerJson, null, 2)}\n`);
  await writeFile(join(dir, 'tokenizer_config.json'), `${JSON.stringify(tokenizerConfig, null, 2)}\n`);
}

/** The byte-level tokenizer in memory (same code path as loading its files). */
export function createByteLevelTokenizer(): HfTokenizer {
  const { tokenizerJson, tokenizerConfig } = byteLevelTokenizerFiles();
  return new HfTokenizer({ tokenizerJson, tokenizerConfig, name: 'byte-level', where: 'byte-level' });
}
