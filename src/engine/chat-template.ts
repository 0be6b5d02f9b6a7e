/**
 * Chat templates: the Jinja template of tokenizer_config.json rendered with
 * `@huggingface/jinja` (a pure-JS Jinja), given `messages`, `add_generation_prompt` and the
 * special tokens, as Hugging Face's `apply_chat_template` does.
 */
import { Template } from '@huggingface/jinja';
import type { ChatMessage } from './tokenizer.ts';
import { TokenizerError } from './tokenizer-errors.ts';

export type ChatTemplateContext = {
  bosToken: string | null;
  eosToken: string | null;
  padToken: string | null;
};

/** A compiled chat template. */
export class ChatTemplate {
  readonly source: string;
  readonly #template: Template;
  readonly #context: ChatTemplateContext;

  constructor(source: string, context: ChatTemplateContext, where: string) {
    this.source = source;
    this.#context = context;
    try {
      this.#template = new Template(source);
    } catch (error) {
      throw new TokenizerError(
        'TOKENIZER_TEMPLATE',
        `${where}: chat_template does not parse: ${String(error)}`,
        {
          cause: error,
        },
      );
    }
  }

  /** The prompt text for `messages`; with `addGenerationPrompt` it ends where the reply begins. */
  render(messages: readonly ChatMessage[], { addGenerationPrompt = true } = {}): string {
    try {
      return this.#template.render({
        messages: messages.map((message) => ({ role: message.role, content: message.content })),
        add_generation_prompt: addGenerationPrompt,
        bos_token: this.#context.bosToken ?? '',
        eos_token: this.#context.eosToken ?? '',
        pad_token: this.#context.padToken ?? '',
      });
    } catch (error) {
      throw new TokenizerError('TOKENIZER_TEMPLATE', `chat template failed to render: ${String(error)}`, {
        cause: error,
      });
    }
  }
}
