import { describe, expect, it } from 'vitest';
import { ChatTemplate } from '../engine/chat-template.ts';
import type { Tokenizer } from '../engine/tokenizer.ts';
import { getDialect } from '../protocol/index.ts';
import { instructedPrompt, renderPrompt, textOnlyPrompt } from './prompt-builder.ts';

/** A tokenizer whose chat template is `source` (encode/decode unused here). */
function withTemplate(source: string): Tokenizer {
  const template = new ChatTemplate(source, { bosToken: null, eosToken: null, padToken: null }, 'test');
  return {
    name: 'test',
    eosTokenId: null,
    encode: () => [],
    decode: () => '',
    applyChatTemplate: (messages) => template.render(messages),
  };
}

const CHATML =
  '{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n';
/** Gemma-style: user and model turns only; a system message raises. */
const RAISES_ON_SYSTEM =
  "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}" +
  '<start_of_turn>{{ m.role }}\n{{ m.content }}<end_of_turn>\n{% endfor %}<start_of_turn>model\n';
/** A template that silently drops system messages. */
const DROPS_SYSTEM =
  "{% for m in messages %}{% if m.role != 'system' %}[{{ m.role }}] {{ m.content }}\n{% endif %}{% endfor %}[assistant] ";

const problem = { id: 'p', text: 'Compute 17 * 23.' };

describe('renderPrompt', () => {
  it('keeps the instructions as the system message where the template has one', () => {
    const messages = instructedPrompt(problem, getDialect('markdown'));
    expect(renderPrompt(messages, withTemplate(CHATML))).toBe(
      `<|im_start|>system\n${messages[0]!.content}<|im_end|>\n<|im_start|>user\nCompute 17 * 23.<|im_end|>\n<|im_start|>assistant`, // Jinja drops the template's final newline
    );
  });

  it('puts them at the head of the user message where the template raises on a system message', () => {
    const messages = instructedPrompt(problem, getDialect('tags'));
    expect(renderPrompt(messages, withTemplate(RAISES_ON_SYSTEM))).toBe(
      `<start_of_turn>user\n${messages[0]!.content}\n\nCompute 17 * 23.<end_of_turn>\n<start_of_turn>model`,
    );
  });

  it('and where the template drops it without a word', () => {
    const messages = textOnlyPrompt(problem, getDialect('tags'));
    expect(renderPrompt(messages, withTemplate(DROPS_SYSTEM))).toBe(
      `[user] ${messages[0]!.content}\n\nCompute 17 * 23.\n[assistant] `,
    );
  });

  it('text-only: reasoning and a boxed answer, no tool instructions', () => {
    const [system] = textOnlyPrompt(problem, getDialect('tags'));
    expect(system!.content).toContain('\\boxed{answer}');
    expect(system!.content).not.toMatch(/python|code|interpreter/i);
  });
});
