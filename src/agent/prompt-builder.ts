/**
 * Prompt construction: a builder turns a problem into chat messages, the tokenizer's chat
 * template turns them into the prompt text. The default builder adds a system message saying
 * which dialect to use and, in one line read from the sandbox's environment, which Python and
 * libraries the interpreter has; `problemOnlyPrompt` sends the plain problem text as the only user
 * message (what the embedded model is trained on).
 */
import type { ChatMessage, Tokenizer } from '../engine/tokenizer.ts';
import type { Dialect, DialectName } from '../protocol/dialect.ts';
import { jailLibraries, jailLibrariesLine } from '../shared/jail-libraries.ts';
import type { Problem } from './problem.ts';

/** Builds the chat messages for a problem in a dialect. */
export type PromptBuilder = (problem: Problem, dialect: Dialect) => ChatMessage[];

const DIALECT_INSTRUCTIONS: Record<DialectName, string> = {
  tags:
    'Solve the math problem. Reason step by step inside <think> and </think>. ' +
    'Whenever computation helps, write Python between <code> and </code>; it runs in a stateful ' +
    'interpreter and its output comes back between <interpreter> and </interpreter>. ' +
    'After </think>, give the final answer as \\boxed{answer}.',
  markdown:
    'Solve the math problem step by step. Whenever computation helps, write Python in a ' +
    '```python code block; it runs in a stateful interpreter and its output comes back in an ' +
    '```output block. Give the final answer as \\boxed{answer}.',
};

/**
 * System message with the dialect's instructions and the interpreter's libraries (`The
 * interpreter is Python 3.11.2 with …, z3-solver 5.4.0.0 (import z3).`, omitted when the
 * sandbox's environment cannot be read), then the problem as the user message.
 */
export const instructedPrompt: PromptBuilder = (problem, dialect) => {
  const libraries = jailLibrariesLine(jailLibraries());
  const instructions = DIALECT_INSTRUCTIONS[dialect.name];
  return [
    { role: 'system', content: libraries === null ? instructions : `${instructions} ${libraries}` },
    { role: 'user', content: problem.text },
  ];
};

/** The problem text alone, as the only user message. */
export const problemOnlyPrompt: PromptBuilder = (problem) => [{ role: 'user', content: problem.text }];

/** The prompt builders by name, for command-line options. */
export const promptBuilders = { instructed: instructedPrompt, 'problem-only': problemOnlyPrompt } as const;
export type PromptBuilderName = keyof typeof promptBuilders;

/**
 * The prompt text. With a tokenizer, its chat template; without one (text-only engines that
 * take raw completions) the messages' contents separated by blank lines, ending with one.
 */
export function renderPrompt(messages: readonly ChatMessage[], tokenizer: Tokenizer | null): string {
  if (tokenizer !== null) return tokenizer.applyChatTemplate(messages);
  return `${messages.map((message) => message.content).join('\n\n')}\n\n`;
}
