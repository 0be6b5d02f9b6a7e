/**
 * Block keys of a trajectory's prompts, remembered per session so a growing prompt is hashed
 * only where it is new: the remembered tokens are compared with the new prompt (a cheap scan)
 * and the keys of blocks before the first difference are reused. Keys depend only on tokens,
 * so one cache serves every replica.
 */
import { type BlockKey, blockKeys } from './prefix-cache.ts';

type Entry = { tokens: Int32Array; length: number; keys: BlockKey[] };

export class BlockKeyCache {
  readonly blockTokens: number;
  readonly #entries = new Map<string, Entry>();

  constructor({ blockTokens }: { blockTokens: number }) {
    this.blockTokens = blockTokens;
  }

  /** Keys of the full blocks of `tokens`; `session` names whose prompts these are (or undefined). */
  keysFor(tokens: readonly number[], session: string | undefined): BlockKey[] {
    const blockTokens = this.blockTokens;
    if (session === undefined) return blockKeys(tokens, blockTokens);
    let entry = this.#entries.get(session);
    if (entry === undefined) {
      entry = { tokens: new Int32Array(Math.max(1024, tokens.length * 2)), length: 0, keys: [] };
      this.#entries.set(session, entry);
    }
    const limit = Math.min(entry.length, tokens.length);
    let same = 0;
    const remembered = entry.tokens;
    while (same < limit && remembered[same] === tokens[same]) same++;
    const reused = Math.min(entry.keys.length, Math.floor(same / blockTokens));
    // A new array: callers keep the one they got (a running sequence's blocks).
    const keys = entry.keys.slice(0, reused);
    const parent = keys[reused - 1];
    const fresh =
      parent === undefined ? blockKeys(tokens, blockTokens) : blockKeys(tokens, blockTokens, reused, parent);
    for (const key of fresh) keys.push(key);
    if (tokens.length > remembered.length) {
      const grown = new Int32Array(tokens.length * 2);
      grown.set(remembered.subarray(0, same));
      entry.tokens = grown;
    }
    const target = entry.tokens;
    for (let index = same; index < tokens.length; index++) target[index] = tokens[index] as number;
    entry.length = tokens.length;
    entry.keys = keys;
    return keys;
  }
}
