/**
 * Pre-tokenization as tokenizer.json declares it: `Split` (a regex or string, behaviors
 * Isolated / Removed / MergedWithPrevious / MergedWithNext), `ByteLevel` (optional GPT-2
 * regex split, optional prefix space, then bytes → byte-level characters) and `Sequence`.
 * The result is the list of words the BPE model encodes one by one.
 */
import { bytesToByteLevelString } from './byte-unicode-table.ts';
import type { PreTokenizerConfig } from './hf-tokenizer-files.ts';
import { compileHfRegex } from './pre-tokenizer-regex.ts';
import { TokenizerError } from './tokenizer-errors.ts';

/** GPT-2's split pattern, used by ByteLevel when `use_regex` is true. */
const GPT2_PATTERN = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

export type PreTokenize = (text: string) => string[];

const encoder = new TextEncoder();

/** Builds the pre-tokenizer that `config` describes (null: the text is one word, as bytes). */
export function createPreTokenizer(config: PreTokenizerConfig | null, where: string): PreTokenize {
  const steps = config === null ? [] : flatten(config);
  const stages = steps.map((step) => createStage(step, where));
  const hasByteLevel = steps.some((step) => step.type === 'ByteLevel');
  return (text) => {
    let pieces = [text];
    for (const stage of stages) pieces = pieces.flatMap(stage);
    // Without a ByteLevel step the words still go to a byte-level vocabulary.
    return hasByteLevel ? pieces : pieces.map((piece) => bytesToByteLevelString(encoder.encode(piece)));
  };
}

function flatten(config: PreTokenizerConfig): PreTokenizerConfig[] {
  return config.type === 'Sequence' ? (config.pretokenizers ?? []).flatMap(flatten) : [config];
}

function createStage(step: PreTokenizerConfig, where: string): (piece: string) => string[] {
  if (step.type === 'Split') {
    if (step.invert) throw new TokenizerError('TOKENIZER_UNSUPPORTED', `${where}: Split with invert=true`);
    const source =
      step.pattern?.Regex ?? (step.pattern?.String !== undefined ? escapeRegex(step.pattern.String) : null);
    if (source === null)
      throw new TokenizerError('TOKENIZER_INVALID', `${where}: Split needs pattern.Regex or pattern.String`);
    const regex = compileHfRegex(source, where);
    const behavior = step.behavior ?? 'Isolated';
    return (piece) => splitWith(piece, regex, behavior, where);
  }
  if (step.type === 'ByteLevel') {
    const regex = step.use_regex === false ? null : compileHfRegex(GPT2_PATTERN, where);
    const addPrefixSpace = step.add_prefix_space === true;
    return (piece) => {
      // An empty piece stays empty: the prefix space is added to text, not to nothing.
      if (piece.length === 0) return [];
      const text = addPrefixSpace && !piece.startsWith(' ') ? ` ${piece}` : piece;
      const words = regex ? splitWith(text, regex, 'Isolated', where) : [text];
      return words.map((word) => bytesToByteLevelString(encoder.encode(word)));
    };
  }
  throw new TokenizerError('TOKENIZER_UNSUPPORTED', `${where}: pre_tokenizer type ${step.type}`);
}

function splitWith(text: string, regex: RegExp, behavior: string, where: string): string[] {
  const pieces: Array<{ text: string; match: boolean }> = [];
  let last = 0;
  regex.lastIndex = 0;
  for (const match of text.matchAll(regex)) {
    if (match[0].length === 0) continue;
    if (match.index > last) pieces.push({ text: text.slice(last, match.index), match: false });
    pieces.push({ text: match[0], match: true });
    last = match.index + match[0].length;
  }
  if (last < text.length) pieces.push({ text: text.slice(last), match: false });
  switch (behavior) {
    case 'Isolated':
      return pieces.map((piece) => piece.text);
    case 'Removed':
      return pieces.filter((piece) => !piece.match).map((piece) => piece.text);
    case 'MergedWithPrevious': {
      const out: string[] = [];
      for (const piece of pieces) {
        if (piece.match && out.length > 0) out[out.length - 1] += piece.text;
        else out.push(piece.text);
      }
      return out;
    }
    case 'MergedWithNext': {
      const out: string[] = [];
      let carry = '';
      for (const piece of pieces) {
        if (piece.match) carry += piece.text;
        else {
          out.push(carry + piece.text);
          carry = '';
        }
      }
      if (carry) out.push(carry);
      return out;
    }
    default:
      throw new TokenizerError('TOKENIZER_UNSUPPORTED', `${where}: Split behavior ${behavior}`);
  }
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
