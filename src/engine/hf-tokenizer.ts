/**
 * A byte-level BPE tokenizer built from the contents of Hugging Face `tokenizer.json` and
 * `tokenizer_config.json`: added tokens are matched first (`hf-tokenizer-added-tokens.ts`: on
 * the raw text, then `normalized` ones on the normalized text), the rest is normalized,
 * pre-tokenized and BPE-encoded. Decoding joins the bytes of all
 * tokens before UTF-8 decoding, so a character split across tokens decodes whole.
 */
import type { z } from 'zod';
import { BpeModel } from './bpe-model.ts';
import { unicodeToByte } from './byte-unicode-table.ts';
import { ChatTemplate } from './chat-template.ts';
import { type AddedToken, AddedTokenMatcher } from './hf-tokenizer-added-tokens.ts';
import {
  configTokenContent,
  type NormalizerConfig,
  type TokenizerConfig,
  type TokenizerConfigInput,
  type TokenizerJson,
  type TokenizerJsonInput,
  tokenizerConfigSchema,
  tokenizerJsonSchema,
} from './hf-tokenizer-files.ts';
import { createPreTokenizer, type PreTokenize } from './pre-tokenizer.ts';
import type { ChatMessage, EncodeOptions, Tokenizer } from './tokenizer.ts';
import { TokenizerError } from './tokenizer-errors.ts';

export type HfTokenizerSource = {
  tokenizerJson: TokenizerJsonInput | unknown;
  tokenizerConfig: TokenizerConfigInput | unknown;
  /** A chat template from a separate `chat_template.jinja`, used when the config has none. */
  chatTemplate?: string | null;
  name?: string;
  /** Where the files came from, for error messages. */
  where?: string;
};

const encoder = new TextEncoder();

/** The Tokenizer of a Hugging Face byte-level BPE tokenizer folder. */
export class HfTokenizer implements Tokenizer {
  readonly name: string;
  readonly eosTokenId: number | null;
  readonly vocabSize: number;
  readonly #model: BpeModel;
  readonly #preTokenize: PreTokenize;
  readonly #normalize: (text: string) => string;
  readonly #addedById = new Map<number, string>();
  readonly #addedByContent = new Map<string, number>();
  /** Added tokens matched in the raw text, and (`normalized: true`) in the normalized text. */
  readonly #rawAddedTokens: AddedTokenMatcher | null;
  readonly #normalizedAddedTokens: AddedTokenMatcher | null;
  readonly #idToToken: string[] = [];
  readonly #template: ChatTemplate | null;

  constructor(source: HfTokenizerSource) {
    const where = source.where ?? 'tokenizer';
    const json = parseOrThrow(tokenizerJsonSchema, source.tokenizerJson, `${where}/tokenizer.json`);
    const config = parseOrThrow(
      tokenizerConfigSchema,
      source.tokenizerConfig,
      `${where}/tokenizer_config.json`,
    );
    this.name = source.name ?? where;
    checkModel(json, `${where}/tokenizer.json`);
    const vocab = new Map<string, number>();
    for (const [token, id] of Object.entries(json.model.vocab)) {
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) {
        throw new TokenizerError(
          'TOKENIZER_INVALID',
          `${where}/tokenizer.json: field model.vocab.${token}: expected a non-negative integer id`,
        );
      }
      vocab.set(token, id);
      this.#idToToken[id] = token;
    }
    const merges = json.model.merges.map((merge, index): [string, string] => {
      if (Array.isArray(merge)) return merge;
      const parts = merge.split(' ');
      if (parts.length !== 2) {
        throw new TokenizerError(
          'TOKENIZER_INVALID',
          `${where}/tokenizer.json model.merges.${index}: not "a b"`,
        );
      }
      return [parts[0]!, parts[1]!];
    });
    const unknown = json.model.unk_token ? (vocab.get(json.model.unk_token) ?? null) : null;
    this.#model = new BpeModel({
      vocab,
      merges,
      ignoreMerges: json.model.ignore_merges === true,
      unknownTokenId: unknown,
      where: `${where}/tokenizer.json`,
    });
    for (const token of json.added_tokens) {
      this.#addedById.set(token.id, token.content);
      this.#addedByContent.set(token.content, token.id);
    }
    this.#normalize = createNormalizer(json.normalizer, `${where}/tokenizer.json normalizer`);
    // Without a normalizer, `normalized` changes nothing: every token is matched in the raw text.
    const onNormalized = (token: AddedToken) => token.normalized === true && json.normalizer !== null;
    this.#rawAddedTokens = AddedTokenMatcher.create(
      json.added_tokens.filter((token) => !onNormalized(token)),
    );
    this.#normalizedAddedTokens = AddedTokenMatcher.create(json.added_tokens.filter(onNormalized), (token) =>
      this.#normalize(token.content),
    );
    for (const token of json.added_tokens.filter(onNormalized)) {
      this.#addedByContent.set(this.#normalize(token.content), token.id);
    }
    this.#preTokenize = createPreTokenizer(json.pre_tokenizer, `${where}/tokenizer.json pre_tokenizer`);
    this.vocabSize = Math.max(this.#idToToken.length, ...[...this.#addedById.keys()].map((id) => id + 1));
    this.eosTokenId = this.#resolveEos(config);
    const templateSource = pickTemplate(config) ?? source.chatTemplate ?? null;
    this.#template =
      templateSource === null
        ? null
        : new ChatTemplate(
            templateSource,
            {
              bosToken: configTokenContent(config.bos_token),
              eosToken: configTokenContent(config.eos_token),
              padToken: configTokenContent(config.pad_token),
            },
            `${where}/tokenizer_config.json`,
          );
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const ids: number[] = [];
    const pushId = (id: number) => ids.push(id);
    const encodeNormalized = (normalized: string) => {
      if (normalized.length === 0) return;
      for (const word of this.#preTokenize(normalized)) {
        for (const id of this.#model.encodeWord(word)) ids.push(id);
      }
    };
    const matchAdded = options.specialTokens !== false;
    const encodeRaw = (segment: string) => {
      if (segment.length === 0) return;
      const normalized = this.#normalize(segment);
      if (matchAdded && this.#normalizedAddedTokens !== null) {
        this.#normalizedAddedTokens.split(normalized, encodeNormalized, pushId);
      } else {
        encodeNormalized(normalized);
      }
    };
    if (matchAdded && this.#rawAddedTokens !== null) this.#rawAddedTokens.split(text, encodeRaw, pushId);
    else encodeRaw(text);
    return ids;
  }

  /** The words the BPE model encodes for `text`: normalized and pre-tokenized, added tokens not split out. */
  preTokenize(text: string): string[] {
    return this.#preTokenize(this.#normalize(text));
  }

  decode(tokenIds: readonly number[]): string {
    // ignoreBOM: a U+FEFF the ids spell at the start is text, not a byte-order mark to drop.
    return new TextDecoder('utf-8', { ignoreBOM: true }).decode(this.tokenBytes(tokenIds));
  }

  /** The raw bytes of a token sequence (for incremental decoding across token boundaries). */
  tokenBytes(tokenIds: readonly number[]): Uint8Array {
    const bytes: number[] = [];
    for (const id of tokenIds) {
      const added = this.#addedById.get(id);
      if (added !== undefined) {
        for (const byte of encoder.encode(added)) bytes.push(byte);
        continue;
      }
      const token = this.#idToToken[id];
      if (token === undefined)
        throw new TokenizerError('TOKENIZER_UNKNOWN_TOKEN', `${this.name}: no token with id ${id}`);
      for (const char of token) {
        const byte = unicodeToByte(char);
        if (byte !== undefined) bytes.push(byte);
        else for (const raw of encoder.encode(char)) bytes.push(raw);
      }
    }
    return Uint8Array.from(bytes);
  }

  /** The id of a token written as text (added or in the vocabulary), or null. */
  tokenToId(token: string): number | null {
    const added = this.#addedByContent.get(token);
    if (added !== undefined) return added;
    const index = this.#idToToken.indexOf(token);
    return index >= 0 ? index : null;
  }

  applyChatTemplate(messages: readonly ChatMessage[]): string {
    if (this.#template === null) {
      throw new TokenizerError(
        'TOKENIZER_TEMPLATE',
        `${this.name}: tokenizer_config.json declares no chat_template`,
      );
    }
    return this.#template.render(messages, { addGenerationPrompt: true });
  }

  #resolveEos(config: TokenizerConfig): number | null {
    const content = configTokenContent(config.eos_token);
    if (content === null) return null;
    const added = this.#addedByContent.get(content);
    if (added !== undefined) return added;
    const index = this.#idToToken.indexOf(content);
    if (index >= 0) return index;
    throw new TokenizerError(
      'TOKENIZER_INVALID',
      `${this.name}: tokenizer_config.json eos_token ${JSON.stringify(content)} is not a known token`,
    );
  }
}

function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue && issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)';
  throw new TokenizerError('TOKENIZER_INVALID', `${where}: field ${field}: ${issue?.message ?? 'invalid'}`);
}

function checkModel(json: TokenizerJson, where: string): void {
  if (json.model.continuing_subword_prefix || json.model.end_of_word_suffix) {
    throw new TokenizerError(
      'TOKENIZER_UNSUPPORTED',
      `${where}: BPE with continuing_subword_prefix/end_of_word_suffix`,
    );
  }
  if (json.decoder !== null && json.decoder.type !== 'ByteLevel') {
    throw new TokenizerError(
      'TOKENIZER_UNSUPPORTED',
      `${where}: decoder ${json.decoder.type} (only ByteLevel)`,
    );
  }
}

function pickTemplate(config: TokenizerConfig): string | null {
  const template = config.chat_template;
  if (template === null || template === undefined) return null;
  if (typeof template === 'string') return template;
  return (template.find((entry) => entry.name === 'default') ?? template[0])?.template ?? null;
}

function createNormalizer(config: NormalizerConfig | null, where: string): (text: string) => string {
  if (config === null) return (text) => text;
  switch (config.type) {
    case 'NFC':
    case 'NFD':
    case 'NFKC':
    case 'NFKD': {
      const form = config.type;
      return (text) => text.normalize(form);
    }
    case 'Lowercase':
      return (text) => text.toLowerCase();
    case 'Sequence': {
      const steps = (config.normalizers ?? []).map((step) => createNormalizer(step, where));
      return (text) => steps.reduce((current, step) => step(current), text);
    }
    default:
      throw new TokenizerError('TOKENIZER_UNSUPPORTED', `${where}: normalizer type ${config.type}`);
  }
}
