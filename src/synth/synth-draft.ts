/**
 * A draft trajectory as the pipeline edits it: prose runs and tool calls, each call with its
 * code block as written, the interpreter output the teacher wrote (simulated, or null) and,
 * once executed, the real outcome. Parsed from tags-dialect text with the protocol parser;
 * rendered back to the trajectory record (model segments: prose and code; tool segments: the
 * interpreter output, loss mask 0).
 */
import { getDialect } from '../protocol/dialects.ts';
import { parseResponse } from '../protocol/response-parser.ts';
import { renderOutcomeBody } from '../protocol/tool-result.ts';
import type { ExecutionOutcome } from '../sandbox/types.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import {
  appendModelSegment,
  appendToolResult,
  createTrajectory,
  finishTrajectory,
} from '../trajectory/trajectory-builder.ts';

export type DraftCall = {
  kind: 'call';
  /** The code block as written, delimiters included (`<code>\n…\n</code>`). */
  block: string;
  code: string;
  /** What the teacher wrote as the interpreter output (trimmed), or null when it wrote none. */
  simulated: string | null;
  /** The raw output block as written, with the whitespace before it; '' when none. */
  simulatedBlock: string;
  /** The real outcome, once the code ran in the sandbox. */
  outcome: ExecutionOutcome | null;
  /** Whether the rendered output is the real one (alignment on, or the teacher wrote none). */
  useReal: boolean;
};
export type DraftItem = { kind: 'text'; text: string } | DraftCall;
export type Draft = DraftItem[];

const dialect = getDialect('tags');

/** Splits tags-dialect text into prose and calls. Never throws: malformed blocks stay where they are. */
export function parseDraft(text: string): Draft {
  const parsed = parseResponse(text, dialect.markup);
  const items: Draft = [];
  let position = 0;
  const parts = parsed.parts;
  for (let index = 0; index < parts.length; index++) {
    const part = parts[index]!;
    if (part.kind !== 'code') continue;
    if (part.outerStart > position) items.push({ kind: 'text', text: text.slice(position, part.outerStart) });
    const next = parts[index + 1];
    const between = next === undefined ? '' : text.slice(part.outerEnd, next.outerStart);
    const hasOutput = next?.kind === 'tool-output' && between.trim() === '';
    items.push({
      kind: 'call',
      block: text.slice(part.outerStart, part.outerEnd),
      code: part.text.replace(/^\s*\n/, '').trimEnd(),
      simulated: hasOutput ? next.text.trim() : null,
      simulatedBlock: hasOutput ? text.slice(part.outerEnd, next.outerEnd) : '',
      outcome: null,
      useReal: false,
    });
    position = hasOutput ? next.outerEnd : part.outerEnd;
    if (hasOutput) index++;
  }
  if (position < text.length) items.push({ kind: 'text', text: text.slice(position) });
  return items;
}

/** The interpreter output text of a call: the real body when it ran, else what the teacher wrote. */
export function callOutput(call: DraftCall): string {
  return showsReal(call) ? renderOutcomeBody(call.outcome!).trim() : (call.simulated ?? '');
}

/** The real output is shown when asked for, or when the teacher wrote none and the code ran. */
function showsReal(call: DraftCall): boolean {
  return call.outcome !== null && (call.useReal || call.simulatedBlock === '');
}

/** The real output body of an executed call (trimmed), or null when it never ran. */
export function realOutput(call: DraftCall): string | null {
  return call.outcome === null ? null : renderOutcomeBody(call.outcome).trim();
}

/** The tool text after a call's code block: the real rendering, or the block as written. */
function toolText(call: DraftCall): string {
  if (showsReal(call))
    return dialect.renderToolResult(call.outcome!, {
      outputOpening: `\n${dialect.markup.toolOutput.openText}\n`,
    });
  return call.simulatedBlock;
}

/** The draft as one text. */
export function draftText(draft: Draft): string {
  return renderPieces(draft)
    .map((piece) => piece.text)
    .join('');
}

type Piece = { kind: 'model' | 'tool'; text: string; call: DraftCall | null };

function renderPieces(draft: Draft): Piece[] {
  const pieces: Piece[] = [];
  let model = '';
  let afterRealOutput = false;
  for (const item of draft) {
    if (item.kind === 'text') {
      // A rendered output ends with a newline; do not double the one the prose starts with.
      model += afterRealOutput ? item.text.replace(/^\n/, '') : item.text;
      afterRealOutput = false;
      continue;
    }
    model += item.block;
    const tool = toolText(item);
    if (tool === '') continue;
    pieces.push({ kind: 'model', text: model, call: null });
    pieces.push({ kind: 'tool', text: tool, call: item });
    model = '';
    afterRealOutput = showsReal(item);
  }
  if (model !== '') pieces.push({ kind: 'model', text: model, call: null });
  return pieces;
}

/** Model and tool segments as plain text (what SFT trains on: tool text gets loss mask 0). */
export function draftSegments(draft: Draft): { kind: 'model' | 'tool'; text: string }[] {
  return renderPieces(draft).map(({ kind, text }) => ({ kind, text }));
}

/** An outcome for a call whose code never ran (execution stages off): says so, claims nothing. */
const NOT_EXECUTED: ExecutionOutcome = {
  status: 'killed',
  reason: "not executed: the executability stage was off; the output is the teacher's",
};

/** The finished trajectory record (text-only: token ids null) for a kept draft. */
export function draftTrajectory(options: {
  draft: Draft;
  id: string;
  problemId: string;
  prompt: string;
  meta?: Record<string, unknown>;
  now?: () => Date;
}): Trajectory {
  const { draft, id, problemId, prompt, meta, now } = options;
  let trajectory = createTrajectory({
    id,
    problemId,
    dialect: 'tags',
    prompt: { text: prompt, tokenIds: null },
    ...(meta === undefined ? {} : { meta }),
    ...(now === undefined ? {} : { now }),
  });
  for (const piece of renderPieces(draft)) {
    if (piece.kind === 'model') {
      trajectory = appendModelSegment(trajectory, {
        text: piece.text,
        tokenIds: null,
        logprobs: null,
        finishReason: 'stop',
        matchedStop: piece.text.endsWith('</code>') ? '</code>' : null,
        policyVersion: null,
      });
    } else {
      const call = piece.call!;
      trajectory = appendToolResult(trajectory, {
        code: call.code,
        outcome: call.outcome ?? NOT_EXECUTED,
        ms: call.outcome !== null && 'ms' in call.outcome ? call.outcome.ms : 0,
        text: piece.text,
        tokenIds: null,
      });
    }
  }
  return finishTrajectory(trajectory, { reason: 'answer', ...(now === undefined ? {} : { now }) });
}
