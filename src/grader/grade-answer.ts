/**
 * `gradeAnswer`: extraction, normalisation, structure, then the rule chain of
 * `compareAnswers`, with the symbolic step in the sandbox when one is given. Every result
 * names the rule that decided. `answersEquivalent` applies the same rules to two answers
 * (for grouping samples in majority voting).
 */
import { type CompareContext, compareAnswers } from './compare-answers.ts';
import { extractAnswer } from './extract-answer.ts';
import { normalizeAnswer } from './normalize-answer.ts';
import { type Answer, parseAnswer } from './parse-answer.ts';
import { symbolicCheckerFor } from './symbolic-checker.ts';
import type { GradeOptions, GradeResult, Grader } from './types.ts';

/** Answers longer than this are not parsed (reason `parse-error`). */
export const MAX_ANSWER_CHARS = 1_000;
/** The default time budget of the symbolic step, per grade. */
export const DEFAULT_SYMBOLIC_TIMEOUT_MS = 5_000;

/** Parses one bare answer (normalise, then structure); null when it is too long. */
export function prepareAnswer(answer: string): Answer | null {
  if (answer.length > MAX_ANSWER_CHARS) return null;
  return parseAnswer(normalizeAnswer(answer));
}

/**
 * `2,74`, `1000,99`, `0,111`: a decimal comma when the other side is one number and the comma
 * cannot be a thousands separator (not exactly three digits after it, or a leading 0); written
 * this way it is otherwise a two-item list. `1,000` was already read as 1000 by normalisation.
 */
const DECIMAL_COMMA = /^([+-]?)(\d+),(\d+)$/;

function readDecimalCommas(left: Answer | null, right: Answer | null): [Answer | null, Answer | null] {
  if (left === null || right === null) return [left, right];
  const asDecimal = (answer: Answer, other: Answer): Answer => {
    if (answer.kind !== 'collection' || other.kind !== 'expression') return answer;
    const match = DECIMAL_COMMA.exec(answer.source);
    if (match === null) return answer;
    const [, sign, whole, fraction] = match as unknown as [string, string, string, string];
    const decimal = (fraction.length >= 2 && fraction.length !== 3) || /^0+$/.test(whole);
    return decimal ? parseAnswer(`${sign}${whole}.${fraction}`) : answer;
  };
  return [asDecimal(left, right), asDecimal(right, left)];
}

function contextFor(options: GradeOptions): CompareContext {
  const { sandbox, timeoutMs = DEFAULT_SYMBOLIC_TIMEOUT_MS } = options;
  if (sandbox === undefined) return { symbolic: null };
  const checker = symbolicCheckerFor(sandbox);
  // One budget for the grade's checks, charged only for the time they run: waiting for a
  // session on a busy sandbox is not the answer's cost.
  const budget = { remainingMs: timeoutMs };
  return {
    symbolic: (query) =>
      budget.remainingMs <= 0 ? Promise.resolve({ outcome: 'timeout' }) : checker.check(query, budget),
  };
}

/** Grades a prediction (a full response or a bare answer) against a reference answer. */
export const gradeAnswer: Grader = async (prediction, reference, options = {}) => {
  const extraction = extractAnswer(prediction);
  if (extraction === null) return { correct: false, extracted: null, reason: 'no-answer' };
  const extracted = extraction.answer;
  const [predicted, expected] = readDecimalCommas(
    prepareAnswer(extracted),
    prepareAnswer(extractAnswer(reference)?.answer ?? reference.trim()),
  );
  if (predicted === null || expected === null) return { correct: false, extracted, reason: 'parse-error' };
  if (predicted.source === '') return { correct: false, extracted, reason: 'no-answer' };
  const decision = await compareAnswers(predicted, expected, contextFor(options));
  if (decision.outcome === 'unavailable') {
    return { correct: null, extracted, reason: decision.reason, cause: decision.cause };
  }
  return { correct: decision.outcome === 'equal', extracted, reason: decision.reason } satisfies GradeResult;
};

/** Whether two answers (bare or in full responses) are equivalent under the grader's rules. */
export async function answersEquivalent(
  first: string,
  second: string,
  options: GradeOptions = {},
): Promise<boolean> {
  const [left, right] = readDecimalCommas(
    prepareAnswer(extractAnswer(first)?.answer ?? first.trim()),
    prepareAnswer(extractAnswer(second)?.answer ?? second.trim()),
  );
  if (left === null || right === null || left.source === '' || right.source === '') return false;
  return (await compareAnswers(left, right, contextFor(options))).outcome === 'equal';
}
