/** The protocol module: dialects, the response parser, tool-result rendering, answer extraction. */
export { extractBoxedAnswer } from '../shared/boxed-answer.ts';
export { createDialect, type DialectSpec, normalizeCode } from './create-dialect.ts';
export type {
  BlockMarkup,
  ClosedCode,
  Dialect,
  DialectMarkup,
  DialectName,
  RenderOptions,
} from './dialect.ts';
export { dialects, getDialect, UnknownDialectError } from './dialects.ts';
export { markdownDialect } from './markdown-dialect.ts';
export {
  type FormatIssue,
  finalAnswer,
  type ParsedResponse,
  type ParseOptions,
  parseResponse,
  type ReasoningState,
  type ResponsePart,
  type ResponsePartKind,
} from './response-parser.ts';
export { tagsDialect } from './tags-dialect.ts';
export {
  DEFAULT_MAX_OUTPUT_CHARS,
  DEFAULT_TRACEBACK_LINES,
  renderOutcomeBody,
  tracebackTail,
  truncateMiddle,
} from './tool-result.ts';
