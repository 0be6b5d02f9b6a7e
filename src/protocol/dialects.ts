/** The registry of dialects, looked up by the name a trajectory or a command records. */
import { AgentMathError } from '../shared/agentmath-error.ts';
import type { Dialect, DialectName } from './dialect.ts';
import { markdownDialect } from './markdown-dialect.ts';
import { tagsDialect } from './tags-dialect.ts';

/** Every dialect by name. */
export const dialects: Readonly<Record<DialectName, Dialect>> = {
  tags: tagsDialect,
  markdown: markdownDialect,
};

/** Thrown by `getDialect` for a name no dialect has. */
export class UnknownDialectError extends AgentMathError {
  constructor(name: string) {
    super(
      'UNKNOWN_DIALECT',
      `unknown dialect "${name}"; known dialects: ${Object.keys(dialects).join(', ')}`,
    );
  }
}

/** The dialect called `name`; throws `UnknownDialectError` (code UNKNOWN_DIALECT) otherwise. */
export function getDialect(name: string): Dialect {
  if (!Object.hasOwn(dialects, name)) throw new UnknownDialectError(name);
  return dialects[name as DialectName];
}
