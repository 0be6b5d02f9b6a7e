/**
 * Stage 3, self-correction injection: a draft whose block failed (stage 2's failed
 * executions; a policy model's failed trajectories fit the same input) goes to the teacher,
 * which writes the continuation after the real error: diagnose, fix, re-execute, continue.
 * The joined draft is verified: run again from the start in a fresh session, every block
 * after the failing one must run, outputs are aligned with the real ones, and the final
 * answer must equal the reference by the grader. Only verified ones are kept.
 */
import { answersEquivalent } from '../grader/grade-answer.ts';
import { getDialect } from '../protocol/dialects.ts';
import { parseResponse } from '../protocol/response-parser.ts';
import { askTeacher, executeDraft, judgeFollowing, type RefineContext } from './refine-draft.ts';
import { type Draft, type DraftCall, draftText, parseDraft, realOutput } from './synth-draft.ts';
import { fillPrompt } from './synth-prompts.ts';

export type SelfCorrectionResult =
  | { status: 'ok'; draft: Draft }
  | {
      status: 'drop';
      reason:
        | 'teacher-unavailable'
        | 'correction-unverified'
        | 'correction-failed'
        | 'sandbox-unavailable'
        | 'no-reference';
      detail: unknown;
    };

/** Has the teacher continue `prefix` (ending with a failed call) and keeps the result only if verified. */
export async function injectSelfCorrection(
  prefix: Draft,
  context: RefineContext,
): Promise<SelfCorrectionResult> {
  const reference = context.record.answer;
  if (reference === null) return { status: 'drop', reason: 'no-reference', detail: null };
  const continuation = await askTeacher(
    context,
    'self-correct',
    fillPrompt(context.prompts.selfCorrect, { problem: context.record.problem, prefix: draftText(prefix) }),
  );
  if (continuation === null) return { status: 'drop', reason: 'teacher-unavailable', detail: null };
  const added = parseDraft(continuation);
  const draft: Draft = [...prefix.map((item) => ({ ...item })), ...added];
  await executeDraft(draft, context.sandbox, context.timeoutMs);
  const calls = draft.filter((item): item is DraftCall => item.kind === 'call');
  if (calls.some((call) => call.outcome?.status === 'killed'))
    return { status: 'drop', reason: 'sandbox-unavailable', detail: null };
  const failedAt = prefix.filter((item) => item.kind === 'call').length - 1;
  const laterFailure = calls.slice(failedAt + 1).find((call) => call.outcome?.status !== 'ok');
  if (calls.length <= failedAt + 1)
    return { status: 'drop', reason: 'correction-failed', detail: 'the continuation runs no code' };
  if (laterFailure)
    return {
      status: 'drop',
      reason: 'correction-failed',
      detail: { code: laterFailure.code, output: realOutput(laterFailure) },
    };
  for (let index = 0; index < draft.length; index++) {
    const call = draft[index]!;
    if (call.kind !== 'call') continue;
    const real = realOutput(call)!;
    if (index >= prefix.length && call.simulated !== null && call.simulated !== real) {
      const verdict = await judgeFollowing(context, call.simulated, real, draftText(draft.slice(index + 1)));
      if (verdict !== 'holds')
        return {
          status: 'drop',
          reason: verdict === 'unavailable' ? 'teacher-unavailable' : 'correction-unverified',
          detail: { simulated: call.simulated, real },
        };
    }
    call.useReal = true;
  }
  const text = draftText(draft);
  const parsed = parseResponse(text, getDialect('tags').markup);
  if (
    parsed.issues.length > 0 ||
    parsed.answer === null ||
    !(await answersEquivalent(parsed.answer, reference))
  ) {
    return {
      status: 'drop',
      reason: 'correction-unverified',
      detail: { answer: parsed.answer, reference, issues: parsed.issues.length },
    };
  }
  return { status: 'ok', draft };
}
