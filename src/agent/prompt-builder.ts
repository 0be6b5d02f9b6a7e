/**
 * Prompt construction: a builder turns a problem into chat messages, the tokenizer's chat
 * template turns them into the prompt text. The default builder adds a system message saying
 * which dialect to use and, in one line read from the sandbox's environment, which Python and
 * libraries the interpreter has; `textOnlyPrompt` asks for step-by-step reasoning and a boxed
 * answer with no tool instructions (the baseline); `problemOnlyPrompt` sends the plain problem
 * text as the only user message (what the embedded model is trained on). `renderPrompt` is the
 * one place a prompt becomes text: `eval`, `solve`, `rollout`, `train rl` (through the agent
 * loop) and `train sft` (through the SFT example builder) all call it, so training and
 * inference see the same prompt ids.
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

const TEXT_ONLY_INSTRUCTIONS =
  'Solve the math problem. Reason step by step, then give the final answer as \\boxed{answer}.';

/** A system message asking for reasoning and a boxed answer, no tools; then the problem. */
export const textOnlyPrompt: PromptBuilder = (problem) => [
  { role: 'system', content: TEXT_ONLY_INSTRUCTIONS },
  { role: 'user', content: problem.text },
];

/** The problem text alone, as the only user message. */
export const problemOnlyPrompt: PromptBuilder = (problem) => [{ role: 'user', content: problem.text }];

/** The prompt builders by name, for command-line options. */
export const promptBuilders = {
  instructed: instructedPrompt,
  'text-only': textOnlyPrompt,
  'problem-only': problemOnlyPrompt,
} as const;
export type PromptBuilderName = keyof typeof promptBuilders;

/**
 * The prompt text. With a tokenizer, its chat template; without one (text-only engines that
 * take raw completions) the messages' contents separated by blank lines, ending with one.
 * A template without a system role (one that drops the system message or raises on it) gets
 * the system text at the head of the first user message instead, so the instructions always
 * reach the model.
 */
export function renderPrompt(messages: readonly ChatMessage[], tokenizer: Tokenizer | null): string {
  if (tokenizer === null) return `${messages.map((message) => message.content).join('\n\n')}\n\n`;
  const system = messages.find((message) => message.role === 'system');
  if (system === undefined) return tokenizer.applyChatTemplate(messages);
  let rendered: string | null = null;
  try {
    rendered = tokenizer.applyChatTemplate(messages);
  } catch {
    rendered = null; // e.g. raise_exception('System role not supported'); the folded form below
  }
  if (rendered?.includes(system.content)) return rendered;
  return tokenizer.applyChatTemplate(systemIntoUser(messages));
}

/** The system messages' text put before the first user message's, separated by a blank line. */
export function systemIntoUser(messages: readonly ChatMessage[]): ChatMessage[] {
  const system = messages
    .filter((message) => message.role === 'system')
    .map((message) => message.content)
    .join('\n\n');
  const rest = messages.filter((message) => message.role !== 'system');
  const firstUser = rest.findIndex((message) => message.role === 'user');
  if (firstUser < 0) return [{ role: 'user', content: system }, ...rest];
  return rest.map((message, index) =>
    index === firstUser ? { role: 'user', content: `${system}\n\n${message.content}` } : message,
  );
}
