/**
 * Tokenizers: the embedded byte-level tokenizer (in memory and from its files), a small
 * handcrafted Qwen-style byte-level BPE tokenizer.json with merges, chat templates, decoding
 * across UTF-8 boundaries, and clear errors for bad folders.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byteToUnicode } from '../src/engine/byte-unicode-table.ts';
import {
  BYTE_LEVEL_EOS_ID,
  byteLevelTokenizerFiles,
  createByteLevelTokenizer,
  HfTokenizer,
  loadTokenizer,
  Utf8StreamDecoder,
  writeByteLevelTokenizerFiles,
} from '../src/engine/index.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentmath-tokenizer-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const SAMPLES = [
  'plain ascii',
  'héllo wörld',
  '数学 2+2=4',
  '😀 emoji 🧮',
  'e\u0301 combining',
  'tab\tnew\nline\r\n',
  '',
];

describe('byte-level tokenizer', () => {
  const tokenizer = createByteLevelTokenizer();

  it('encodes text as its UTF-8 byte values', () => {
    for (const text of SAMPLES) expect(tokenizer.encode(text)).toEqual([...new TextEncoder().encode(text)]);
  });

  it('round-trips multibyte UTF-8', () => {
    for (const text of SAMPLES) expect(tokenizer.decode(tokenizer.encode(text))).toBe(text);
  });

  it('has EOS 256, pad 257, vocabulary 258, and matches the EOS text as one token', () => {
    expect(tokenizer.eosTokenId).toBe(256);
    expect(tokenizer.vocabSize).toBe(258);
    expect(tokenizer.encode('a<|endoftext|>b<|pad|>')).toEqual([97, 256, 98, 257]);
    const literal = tokenizer.encode('a<|endoftext|>', { specialTokens: false });
    expect(literal).toHaveLength(14);
    expect(literal).not.toContain(256);
    expect(tokenizer.decode([104, 105, BYTE_LEVEL_EOS_ID])).toBe('hi<|endoftext|>');
  });

  it('renders the chat template with role markers as plain bytes', () => {
    const prompt = tokenizer.applyChatTemplate([
      { role: 'system', content: 'Use Python.' },
      { role: 'user', content: 'What is 6*7?' },
    ]);
    expect(prompt).toBe('<|system|>\nUse Python.\n<|user|>\nWhat is 6*7?\n<|assistant|>\n');
    expect(tokenizer.encode(prompt).every((id) => id < 256)).toBe(true);
  });

  it('writes files that load through loadTokenizer to the same tokenizer', async () => {
    const folder = join(dir, 'byte-level');
    await writeByteLevelTokenizerFiles(folder);
    const loaded = await loadTokenizer(folder);
    for (const text of SAMPLES) expect(loaded.encode(text)).toEqual(tokenizer.encode(text));
    expect(loaded.eosTokenId).toBe(256);
    expect(loaded.applyChatTemplate([{ role: 'user', content: 'x' }])).toBe('<|user|>\nx\n<|assistant|>\n');
  });

  it('describes the vocabulary in tokenizer.json as the byte-level table with ids = bytes', () => {
    const { tokenizerJson, tokenizerConfig } = byteLevelTokenizerFiles();
    const vocab = tokenizerJson.model.vocab;
    expect(Object.keys(vocab)).toHaveLength(256);
    expect(vocab[byteToUnicode(32)]).toBe(32);
    expect(vocab.A).toBe(65);
    expect(tokenizerJson.model.merges).toEqual([]);
    expect(tokenizerJson.added_tokens).toMatchObject([
      { id: 256, content: '<|endoftext|>', special: true },
      { id: 257, content: '<|pad|>', special: true },
    ]);
    expect(tokenizerConfig).toMatchObject({ eos_token: '<|endoftext|>' });
  });

  it('decodes a character split across tokens whole, and streams it without half characters', () => {
    const ids = tokenizer.encode('a😀b');
    expect(ids).toHaveLength(6);
    // Decoding a prefix that ends inside the emoji yields a replacement character, never garbage bytes.
    expect(tokenizer.decode(ids.slice(0, 3))).toBe('a\uFFFD');
    const stream = new Utf8StreamDecoder();
    const pieces = ids.map((id) => stream.push(tokenizer.tokenBytes([id])));
    expect(pieces).toEqual(['a', '', '', '', '😀', 'b']);
    expect(stream.end()).toBe('');
  });
});

/** Qwen2's pre-tokenizer split pattern. */
const QWEN_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** A Qwen-style chat template: ChatML with a default system message. */
const QWEN_STYLE_TEMPLATE = [
  "{%- if messages[0]['role'] == 'system' %}",
  "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}",
  '{%- else %}',
  "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}",
  '{%- endif %}',
  '{%- for message in messages %}',
  "{%- if not (message.role == 'system' and loop.first) %}",
  "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}",
  '{%- endif %}',
  '{%- endfor %}',
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}",
].join('\n');

/** A small byte-level BPE vocabulary: the 256 byte characters, then merged tokens in merge order. */
function handcraftedBpe(mergeFormat: 'strings' | 'pairs' = 'strings') {
  const vocab: Record<string, number> = {};
  for (let byte = 0; byte < 256; byte++) vocab[byteToUnicode(byte)] = byte;
  const merges: Array<[string, string]> = [
    ['h', 'e'],
    ['l', 'l'],
    ['he', 'll'],
    ['hell', 'o'],
    ['Ġ', 'w'],
    ['o', 'r'],
    ['Ġw', 'or'],
    ['l', 'd'],
    ['Ġwor', 'ld'],
    ['Ã', '©'],
  ];
  for (const [left, right] of merges) vocab[left + right] = Object.keys(vocab).length;
  return {
    version: '1.0',
    added_tokens: [
      {
        id: 300,
        content: '<|endoftext|>',
        special: true,
        normalized: false,
        lstrip: false,
        rstrip: false,
        single_word: false,
      },
      {
        id: 301,
        content: '<|im_start|>',
        special: true,
        normalized: false,
        lstrip: false,
        rstrip: false,
        single_word: false,
      },
      {
        id: 302,
        content: '<|im_end|>',
        special: true,
        normalized: false,
        lstrip: false,
        rstrip: false,
        single_word: false,
      },
    ],
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: QWEN_PATTERN }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: mergeFormat === 'strings' ? merges.map(([left, right]) => `${left} ${right}`) : merges,
    },
  };
}

const qwenConfig = {
  eos_token: '<|im_end|>',
  pad_token: '<|endoftext|>',
  bos_token: null,
  chat_template: QWEN_STYLE_TEMPLATE,
};

describe('handcrafted byte-level BPE tokenizer.json', () => {
  const tokenizerJson = handcraftedBpe();
  const tokenizer = new HfTokenizer({ tokenizerJson, tokenizerConfig: qwenConfig, name: 'tiny-qwen' });
  const id = (token: string) => tokenizerJson.model.vocab[token]!;

  it('applies merges in rank order within pre-tokenized words', () => {
    expect(tokenizer.encode('hello world')).toEqual([id('hello'), id('Ġworld')]);
    expect(tokenizer.encode('hellp')).toEqual([id('hell'), id('p')]);
    expect(tokenizer.encode('lll')).toEqual([id('ll'), id('l')]);
  });

  it('splits digits one by one and keeps punctuation apart, as the Qwen pattern says', () => {
    expect(tokenizer.encode('x=2024')).toEqual([id('x'), id('='), id('2'), id('0'), id('2'), id('4')]);
  });

  it('matches special tokens before BPE', () => {
    expect(tokenizer.encode('<|im_start|>hello<|im_end|>')).toEqual([301, id('hello'), 302]);
    expect(tokenizer.eosTokenId).toBe(302);
  });

  it('NFC-normalizes before encoding and merges the two bytes of é', () => {
    expect(tokenizer.encode('e\u0301')).toEqual(tokenizer.encode('é'));
    expect(tokenizer.encode('é')).toEqual([id('Ã©')]);
  });

  it('round-trips text with multibyte characters', () => {
    for (const text of ['hello world, 数学 😀', 'print(6*7)\n>>> 42\n', '<|im_start|>user\nhi<|im_end|>']) {
      expect(tokenizer.decode(tokenizer.encode(text))).toBe(text.normalize('NFC'));
    }
  });

  it('reads merges written as [left, right] pairs the same as "left right" strings', () => {
    const pairs = new HfTokenizer({ tokenizerJson: handcraftedBpe('pairs'), tokenizerConfig: qwenConfig });
    expect(pairs.encode('hello world')).toEqual(tokenizer.encode('hello world'));
  });

  it('renders a Qwen-style chat template', () => {
    expect(tokenizer.applyChatTemplate([{ role: 'user', content: 'What is 6*7?' }])).toBe(
      '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' +
        '<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(
      tokenizer.applyChatTemplate([
        { role: 'system', content: 'Reason step by step.' },
        { role: 'user', content: 'Q' },
      ]),
    ).toBe(
      '<|im_start|>system\nReason step by step.<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('loads from a folder, with the template in chat_template.jinja when the config has none', async () => {
    const folder = join(dir, 'tiny-qwen');
    await writeByteLevelTokenizerFiles(folder);
    await writeFile(join(folder, 'tokenizer.json'), JSON.stringify(tokenizerJson));
    const { chat_template: _, ...configWithoutTemplate } = qwenConfig;
    await writeFile(join(folder, 'tokenizer_config.json'), JSON.stringify(configWithoutTemplate));
    await writeFile(join(folder, 'chat_template.jinja'), QWEN_STYLE_TEMPLATE);
    const loaded = await loadTokenizer(folder);
    expect(loaded.encode('hello world')).toEqual([id('hello'), id('Ġworld')]);
    expect(loaded.applyChatTemplate([{ role: 'user', content: 'Q' }])).toContain(
      '<|im_start|>user\nQ<|im_end|>',
    );
  });
});

describe('tokenizer errors', () => {
  it('names the missing file', async () => {
    await expect(loadTokenizer(join(dir, 'nowhere'))).rejects.toMatchObject({ code: 'TOKENIZER_INVALID' });
    await expect(loadTokenizer(join(dir, 'nowhere'))).rejects.toThrow(/nowhere\/tokenizer\.json/);
  });

  it('names a bad field', () => {
    const broken = handcraftedBpe() as unknown as { model: { vocab: unknown } };
    broken.model.vocab = 'nope';
    expect(() => new HfTokenizer({ tokenizerJson: broken, tokenizerConfig: {}, where: 'x' })).toThrow(
      /x\/tokenizer\.json: field model\.vocab/,
    );
  });

  it('refuses components it does not implement', () => {
    const unigram = { ...handcraftedBpe(), normalizer: { type: 'Precompiled' } };
    expect(() => new HfTokenizer({ tokenizerJson: unigram, tokenizerConfig: {} })).toThrow(
      expect.objectContaining({ code: 'TOKENIZER_UNSUPPORTED' }),
    );
  });

  it('says so when there is no chat template', () => {
    const tokenizer = new HfTokenizer({ tokenizerJson: handcraftedBpe(), tokenizerConfig: {} });
    expect(() => tokenizer.applyChatTemplate([{ role: 'user', content: 'x' }])).toThrow(
      expect.objectContaining({ code: 'TOKENIZER_TEMPLATE' }),
    );
  });
});
