/**
 * One SFT example from a written solution: the prompt the agent loop builds for the embedded
 * model (the problem as the only user message, through the tokenizer's chat template), then
 * the solution's segments, then EOS. Loss mask: 0 on the prompt and on tool segments
 * (interpreter output is never trained on), 1 on model segments and on the EOS, so the model
 * learns to stop after its answer.
 */
import { type PromptBuilder, problemOnlyPrompt, renderPrompt } from '../agent/index.ts';
import type { Tokenizer } from '../engine/tokenizer.ts';
import type { Dialect } from '../protocol/dialect.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import type { TaskSolution } from '../tasks/types.ts';

/** A tokenized training sequence with its loss mask and where it came from. */
export type SftExample = {
  id: string;
  level: number;
  inputIds: number[];
  /** 1 = trained (model text, EOS), 0 = prompt and interpreter output. */
  lossMask: number[];
};

/**
 * Tokenizes a solution as the agent loop would see it at inference: `prompt` is the builder
 * the agent loop uses for this model (problem-only for the embedded model, the default;
 * `instructedPrompt` for a Hugging Face model served as `eval` serves it).
 */
export function buildSftExample(
  solution: TaskSolution,
  tokenizer: Tokenizer,
  dialect: Dialect,
  prompt: PromptBuilder = problemOnlyPrompt,
): SftExample {
  const { problem } = solution;
  const eos = tokenizer.eosTokenId;
  if (eos === null) {
    throw new AgentMathError(
      'SFT_NO_EOS',
      `tokenizer ${tokenizer.name} declares no EOS token to end responses`,
    );
  }
  const promptText = renderPrompt(prompt({ id: problem.id, text: problem.problem }, dialect), tokenizer);
  const inputIds = tokenizer.encode(promptText);
  const lossMask: number[] = inputIds.map(() => 0);
  for (const segment of solution.segments) {
    // Neither model text nor tool output may smuggle in a special token.
    const ids = tokenizer.encode(segment.text, { specialTokens: false });
    const mask = segment.kind === 'model' ? 1 : 0;
    for (const id of ids) {
      inputIds.push(id);
      lossMask.push(mask);
    }
  }
  inputIds.push(eos);
  lossMask.push(1);
  return { id: problem.id, level: problem.level, inputIds, lossMask };
}
