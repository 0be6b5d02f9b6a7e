/**
 * The base class of every error AgentMath throws. Expected failures (a Python timeout, a
 * truncated trajectory) are values, not errors; what is thrown is a bug or broken
 * infrastructure, and carries a stable `code` that callers and tests branch on.
 */
export class AgentMathError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}
