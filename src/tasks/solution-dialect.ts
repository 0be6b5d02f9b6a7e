/**
 * Whether a written solution is in a dialect's markup: every interpreter output must follow
 * model text that ends with a code block the dialect closes (with or without the stop string the
 * engine may have trimmed). Training a model on one dialect's markup under the other dialect's
 * instructions would teach it to write code the agent loop never runs.
 */
import type { Dialect } from '../protocol/dialect.ts';
import type { TaskSolution } from './types.ts';

/** Why `solution` is not written in `dialect`, or null when it is. */
export function solutionDialectIssue(solution: TaskSolution, dialect: Dialect): string | null {
  for (const [index, segment] of solution.segments.entries()) {
    if (segment.kind !== 'tool') continue;
    const before = solution.segments[index - 1];
    if (before?.kind !== 'model') return `segment ${index}: interpreter output with no model text before it`;
    const closed = [null, ...dialect.stopStrings].some(
      (stop) => dialect.closedCodeAtEnd(before.text, stop) !== null,
    );
    if (!closed) {
      return `segment ${index}: the model text before this interpreter output does not end with a ${dialect.name} code block`;
    }
  }
  return null;
}
