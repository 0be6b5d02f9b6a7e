/**
 * The error for a trajectory record that is not valid, naming the file, the line and the
 * field: `runs/x.jsonl line 12: segments.3.tokenIds.5: expected nonnegative integer`.
 */
import type { z } from 'zod';
import { AgentMathError } from '../shared/agentmath-error.ts';

/** Where a bad record came from; `file` and `line` are absent for records built in memory. */
export type RecordLocation = { file?: string; line?: number };

/** Thrown when a trajectory record fails to parse or validate (code TRAJECTORY_INVALID). */
export class InvalidTrajectoryError extends AgentMathError {
  readonly file: string | null;
  readonly line: number | null;
  /** The dotted path of the first bad field, or null for a line that is not JSON. */
  readonly field: string | null;

  constructor(
    location: RecordLocation,
    field: string | null,
    problem: string,
    options?: { cause?: unknown },
  ) {
    super(
      'TRAJECTORY_INVALID',
      `${describeLocation(location)}${field === null ? '' : `${field}: `}${problem}`,
      options,
    );
    this.file = location.file ?? null;
    this.line = location.line ?? null;
    this.field = field;
  }

  /** The error for the first issue of a failed zod parse (and how many more there were). */
  static fromZod(location: RecordLocation, error: z.ZodError): InvalidTrajectoryError {
    const [first, ...rest] = error.issues;
    const field = first && first.path.length > 0 ? first.path.map(String).join('.') : '(record)';
    const more =
      rest.length > 0 ? ` (and ${rest.length} more ${rest.length === 1 ? 'issue' : 'issues'})` : '';
    return new InvalidTrajectoryError(location, field, `${first ? describeIssue(first) : 'invalid'}${more}`);
  }
}

function describeLocation({ file, line }: RecordLocation): string {
  if (file !== undefined && line !== undefined) return `${file} line ${line}: `;
  if (file !== undefined) return `${file}: `;
  if (line !== undefined) return `line ${line}: `;
  return '';
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message)) {
    return `missing (expected ${issue.expected})`;
  }
  return issue.message.replace(/^Invalid input: /, '');
}
