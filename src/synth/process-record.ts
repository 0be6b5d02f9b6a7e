/**
 * One input record through the three stages: decontamination, the teacher rewrite, format
 * repair, executability / alignment / rationality, the answer check, and self-correction for
 * blocks that failed. Returns what became of it; never throws for an expected failure (an
 * outage of the teacher or the sandbox is a drop with that reason, counted apart from wrong data).
 */

import type { NgramIndex } from '../eval/decontamination.ts';
import { answersEquivalent } from '../grader/grade-answer.ts';
import { getDialect } from '../protocol/dialects.ts';
import { parseResponse } from '../protocol/response-parser.ts';
import { repairFormat } from './format-repair.ts';
import { askTeacher, type RefineContext, refineDraft } from './refine-draft.ts';
import { injectSelfCorrection } from './self-correction.ts';
import { type Draft, draftText, draftTrajectory, parseDraft } from './synth-draft.ts';
import { fillPrompt } from './synth-prompts.ts';
import type { SynthOutcome, SynthStage } from './synth-record.ts';

export type ProcessOptions = Omit<RefineContext, 'spend' | 'executability' | 'alignment' | 'rationality'> & {
  stages: ReadonlySet<SynthStage>;
  rationality: NonNullable<RefineContext['rationality']>;
  decontamination: NgramIndex | null;
  now?: () => Date;
};

/** Processes one record. */
export async function processRecord(options: ProcessOptions): Promise<SynthOutcome> {
  const { record, stages } = options;
  const spend = { tokens: 0 };
  function drop(stage: 'input' | 'rewrite' | SynthStage, reason: string, detail?: unknown): SynthOutcome {
    return {
      status: 'dropped',
      id: record.id,
      drop: { stage, reason, ...(detail === undefined ? {} : { detail }) },
      teacherTokens: spend.tokens,
    };
  }

  if (stages.has('decontaminate') && options.decontamination !== null) {
    const matches = options.decontamination.matches(record.problem);
    if (matches.length > 0) return drop('decontaminate', 'benchmark-overlap', matches);
  }
  const context: RefineContext = {
    ...options,
    executability: stages.has('executability'),
    alignment: stages.has('alignment'),
    rationality: stages.has('rationality') ? options.rationality : null,
    spend,
  };
  const rewritten = await askTeacher(
    context,
    'rewrite',
    fillPrompt(options.prompts.rewrite, { problem: record.problem, solution: record.solution }),
  );
  if (rewritten === null) return drop('rewrite', 'teacher-unavailable');
  const notes: string[] = [];
  let text = rewritten;
  if (stages.has('format')) {
    const format = repairFormat(rewritten);
    if (format.status === 'drop') return drop('format', format.reason, format.detail);
    text = format.text;
    notes.push(...format.repairs);
  }
  const refined = await refineDraft(parseDraft(text), context, 0, notes);
  let draft: Draft;
  if (refined.status === 'drop') return drop(refined.stage, refined.reason, refined.detail);
  if (refined.status === 'failed-call') {
    if (!stages.has('self-correction')) return drop('executability', 'code-failed', refined.detail);
    const corrected = await injectSelfCorrection(refined.prefix, context);
    if (corrected.status === 'drop')
      return drop('self-correction', corrected.reason, { failure: refined.detail, why: corrected.detail });
    draft = corrected.draft;
    notes.push('self-corrected');
  } else {
    draft = refined.draft;
  }
  if (stages.has('answer')) {
    const answer = parseResponse(draftText(draft), getDialect('tags').markup).answer;
    if (answer === null) return drop('answer', 'no-answer');
    if (record.answer !== null && !(await answersEquivalent(answer, record.answer))) {
      return drop('answer', 'wrong-answer', { answer, reference: record.answer });
    }
  }
  const trajectory = draftTrajectory({
    draft,
    id: `synth-${record.id}`,
    problemId: record.id,
    prompt: record.problem,
    meta: { synth: { notes, reference: record.answer } },
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  return { status: 'kept', id: record.id, trajectory, notes, teacherTokens: spend.tokens };
}
