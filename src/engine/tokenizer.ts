/**
 * The tokenizer contract: text ↔ token ids, and the chat template that turns a problem into a
 * prompt. Implementations: Hugging Face `tokenizer.json` + `tokenizer_config.json` from a
 * local folder, and the embedded model's byte-level tokenizer (described in the same files).
 */
export type ChatMessage = { role: 'system' | 'user' | 'assistant'; content: string };

export interface Tokenizer {
  readonly name: string;
  /** Token id that ends a response, or null if the tokenizer declares none. */
  readonly eosTokenId: number | null;
  encode(text: string): number[];
  decode(tokenIds: readonly number[]): string;
  /** The prompt text for a conversation, ending where the assistant's reply begins. */
  applyChatTemplate(messages: readonly ChatMessage[]): string;
}
