/**
 * Errors from loading and using tokenizers, with stable codes: TOKENIZER_INVALID (a file that
 * is missing or malformed), TOKENIZER_UNSUPPORTED (a component this implementation does not
 * cover), TOKENIZER_TEMPLATE (the chat template failed), TOKENIZER_UNKNOWN_TOKEN.
 */
import { AgentMathError } from '../shared/agentmath-error.ts';

export type TokenizerErrorCode =
  | 'TOKENIZER_INVALID'
  | 'TOKENIZER_UNSUPPORTED'
  | 'TOKENIZER_TEMPLATE'
  | 'TOKENIZER_UNKNOWN_TOKEN';

/** A tokenizer problem; the message names the file and field where there is one. */
export class TokenizerError extends AgentMathError {
  constructor(code: TokenizerErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
