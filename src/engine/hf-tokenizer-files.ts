/**
 * The parts of Hugging Face `tokenizer.json` and `tokenizer_config.json` that byte-level BPE
 * tokenizers use, as zod schemas (unknown fields are allowed: the files carry many). Covered:
 * model BPE (vocab, merges as "a b" strings or [a, b] pairs, ignore_merges, unk_token),
 * added_tokens, normalizers NFC/NFD/NFKC/NFKD/Lowercase/Sequence, pre-tokenizers
 * Split/ByteLevel/Sequence, decoder ByteLevel. Not covered: WordPiece, Unigram, SentencePiece
 * Metaspace tokenizers.
 */
import { z } from 'zod';

export const addedTokenSchema = z.object({
  id: z.number().int().nonnegative(),
  content: z.string().min(1),
  single_word: z.boolean().optional(),
  lstrip: z.boolean().optional(),
  rstrip: z.boolean().optional(),
  normalized: z.boolean().optional(),
  special: z.boolean().optional(),
});

export type NormalizerConfig = { type: string; normalizers?: NormalizerConfig[] | undefined };
export const normalizerSchema: z.ZodType<NormalizerConfig> = z.lazy(() =>
  z.looseObject({ type: z.string(), normalizers: z.array(normalizerSchema).optional() }),
);

export type PreTokenizerConfig = {
  type: string;
  pretokenizers?: PreTokenizerConfig[] | undefined;
  pattern?: { Regex?: string | undefined; String?: string | undefined } | undefined;
  behavior?: string | undefined;
  invert?: boolean | undefined;
  add_prefix_space?: boolean | undefined;
  use_regex?: boolean | undefined;
};
export const preTokenizerSchema: z.ZodType<PreTokenizerConfig> = z.lazy(() =>
  z.looseObject({
    type: z.string(),
    pretokenizers: z.array(preTokenizerSchema).optional(),
    pattern: z.object({ Regex: z.string().optional(), String: z.string().optional() }).optional(),
    behavior: z.string().optional(),
    invert: z.boolean().optional(),
    add_prefix_space: z.boolean().optional(),
    use_regex: z.boolean().optional(),
  }),
);

/**
 * model.vocab and model.merges are checked with plain loops: they hold ~150k entries each,
 * and element-wise zod schemas took about a second on Qwen3's file. The vocabulary's ids are
 * checked where the tokenizer reads them (one pass over the 150k entries, not two).
 */
const vocabSchema = z.custom<Record<string, unknown>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  { message: 'expected an object of token → id' },
);

const mergesSchema = z.custom<Array<string | [string, string]>>(
  (value) =>
    Array.isArray(value) &&
    value.every(
      (merge) =>
        typeof merge === 'string' ||
        (Array.isArray(merge) &&
          merge.length === 2 &&
          typeof merge[0] === 'string' &&
          typeof merge[1] === 'string'),
    ),
  { message: 'expected an array of "a b" strings or [a, b] pairs' },
);

export const tokenizerJsonSchema = z.looseObject({
  added_tokens: z.array(addedTokenSchema).default([]),
  normalizer: normalizerSchema.nullable().default(null),
  pre_tokenizer: preTokenizerSchema.nullable().default(null),
  decoder: z.looseObject({ type: z.string() }).nullable().default(null),
  model: z.looseObject({
    type: z.literal('BPE'),
    vocab: vocabSchema,
    merges: mergesSchema.default([]),
    unk_token: z.string().nullable().optional(),
    ignore_merges: z.boolean().optional(),
    continuing_subword_prefix: z.string().nullable().optional(),
    end_of_word_suffix: z.string().nullable().optional(),
  }),
});

export type TokenizerJson = z.infer<typeof tokenizerJsonSchema>;
export type TokenizerJsonInput = z.input<typeof tokenizerJsonSchema>;

/** A token written in tokenizer_config.json: a string, or an AddedToken object. */
const configTokenSchema = z.union([z.string(), z.looseObject({ content: z.string() })]).nullable();

export const tokenizerConfigSchema = z.looseObject({
  chat_template: z
    .union([z.string(), z.array(z.object({ name: z.string(), template: z.string() }))])
    .nullable()
    .optional(),
  eos_token: configTokenSchema.optional(),
  bos_token: configTokenSchema.optional(),
  pad_token: configTokenSchema.optional(),
  unk_token: configTokenSchema.optional(),
});

export type TokenizerConfig = z.infer<typeof tokenizerConfigSchema>;
export type TokenizerConfigInput = z.input<typeof tokenizerConfigSchema>;

/** The text of a token written either way, or null. */
export function configTokenContent(token: z.infer<typeof configTokenSchema> | undefined): string | null {
  if (token === null || token === undefined) return null;
  return typeof token === 'string' ? token : token.content;
}
