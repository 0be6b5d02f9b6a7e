/**
 * The tokenizer contract: text ↔ token ids, and the chat template that turns a problem into a
 * prompt. Implementations: Hugging Face `tokenizer.json` + `tokenizer_config.json` from a
 * local folder, and the embedded model's byte-level tokenizer (described in the same files).
 */
export type ChatMessage = { role: 'system' | 'user' | 'assistant'; content: string };

export type EncodeOptions = { specialTokens?: boolean };

export interface Tokenizer {
  readonly name: string;
  /** Token id that ends a response, or null if the tokenizer declares none. */
  readonly eosTokenId: number | null;
  /**
   * Token ids of `text`. Special tokens written in the text (`<|endoftext|>`) become their ids
   * unless `specialTokens` is false: tool output is encoded with it off, so code cannot print
   * an end-of-sequence token into a trajectory.
   */
  encode(text: string, options?: EncodeOptions): number[];
  decode(tokenIds: readonly number[]): string;
  /** The prompt text for a conversation, ending where the assistant's reply begins. */
  applyChatTemplate(messages: readonly ChatMessage[]): string;
}
