/**
 * Grading a JSONL stream of `{"prediction", "reference"}` lines: one result per input line,
 * in order, written as soon as it is known. A bad line yields `{"error": "line N: …"}` in
 * its place and the rest continues. `unavailable` counts grades without a verdict
 * (`grader-unavailable`).
 */
import { z } from 'zod';
import { gradeAnswer } from './grade-answer.ts';
import type { GradeOptions, GradeResult, Grader } from './types.ts';

const gradeRequestSchema = z.object({ prediction: z.string(), reference: z.string() });

export type GradeLineResult = GradeResult | { error: string };

/**
 * Grades each line of `lines` (1-based numbering in errors) with `grader` (ours by default) and
 * hands each result to `write`.
 */
export async function gradeLines(
  lines: AsyncIterable<string> | Iterable<string>,
  write: (result: GradeLineResult) => void | Promise<void>,
  options: GradeOptions = {},
  grader: Grader = gradeAnswer,
): Promise<{ graded: number; errors: number; unavailable: number }> {
  let lineNumber = 0;
  let graded = 0;
  let errors = 0;
  let unavailable = 0;
  for await (const line of lines) {
    lineNumber++;
    let result: GradeLineResult;
    let request: unknown;
    try {
      request = JSON.parse(line);
    } catch (error) {
      request = undefined;
      result = { error: `line ${lineNumber}: not JSON (${(error as Error).message})` };
    }
    if (request !== undefined) {
      const parsed = gradeRequestSchema.safeParse(request);
      if (parsed.success) {
        result = await grader(parsed.data.prediction, parsed.data.reference, options);
        graded++;
        if (result.correct === null) unavailable++;
      } else {
        const issue = parsed.error.issues[0];
        const field = issue?.path.join('.') || 'line';
        result = { error: `line ${lineNumber}: field "${field}": ${issue?.message ?? 'invalid'}` };
      }
    }
    if ('error' in result!) errors++;
    await write(result!);
  }
  return { graded, errors, unavailable };
}
