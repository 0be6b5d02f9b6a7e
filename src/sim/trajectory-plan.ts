/**
 * What a simulated trajectory will say, decided before it starts: its response length in
 * model tokens, where each code block closes, how long each tool output is, and its final
 * answer. `responseLayout` turns a plan into the response text (the tags dialect, one
 * character per token under the byte-level tokenizer): `<think>`, filler, code blocks that
 * close at the planned positions, filler, `</think>` and `\boxed{answer}`.
 */

export type PlannedToolCall = {
  /** Where the call sits in the response, as a fraction of the filler (0..1, ascending). */
  at: number;
  /** Characters the code prints (the tool output before rendering). */
  outputTokens: number;
  /** The call's latency when the plan fixes it (a replayed real call); absent = the sandbox draws it. */
  latencyMs?: number;
};

export type TrajectoryPlan = {
  /** Model tokens of the whole response (raised to what the structure needs). */
  responseTokens: number;
  toolCalls: PlannedToolCall[];
  answer: string;
};

/**
 * The code a planned call runs: the simulated sandbox prints `outputTokens` characters for it,
 * and takes `latencyMs` when given.
 */
export function plannedCode(outputTokens: number, latencyMs?: number): string {
  return latencyMs === undefined
    ? `print(sim_output(${outputTokens}))`
    : `print(sim_output(${outputTokens}, latency_ms=${Math.round(latencyMs)}))`;
}

const OPENING = '<think>\n';
const closing = (answer: string) => `\n</think>\n\\boxed{${answer}}`;
const codeBlock = (call: PlannedToolCall) =>
  `<code>\n${plannedCode(call.outputTokens, call.latencyMs)}\n</code>`;
const FILLER = 'x';

/** The response as pieces: literal text or a run of filler characters. */
export type ResponseLayout = {
  pieces: (
    | { kind: 'text'; text: string; start: number }
    | { kind: 'filler'; length: number; start: number }
  )[];
  length: number;
};

export function responseLayout(plan: TrajectoryPlan): ResponseLayout {
  const fixed: string[] = [OPENING, ...plan.toolCalls.map((call) => codeBlock(call)), closing(plan.answer)];
  const fixedLength = fixed.reduce((sum, text) => sum + text.length, 0);
  const filler = Math.max(0, plan.responseTokens - fixedLength);
  const pieces: ResponseLayout['pieces'] = [];
  let start = 0;
  const push = (piece: { kind: 'text'; text: string } | { kind: 'filler'; length: number }) => {
    const length = piece.kind === 'text' ? piece.text.length : piece.length;
    if (length === 0) return;
    pieces.push({ ...piece, start });
    start += length;
  };
  push({ kind: 'text', text: OPENING });
  let used = 0;
  for (const call of plan.toolCalls) {
    const upTo = Math.round(filler * Math.min(1, Math.max(0, call.at)));
    const gap = Math.max(0, upTo - used);
    push({ kind: 'filler', length: gap });
    used += gap;
    push({ kind: 'text', text: codeBlock(call) });
  }
  push({ kind: 'filler', length: filler - used });
  push({ kind: 'text', text: closing(plan.answer) });
  return { pieces, length: start };
}

/** The response text from character `from` up to (not including) `to`. */
export function responseSlice(layout: ResponseLayout, from: number, to: number): string {
  let text = '';
  for (const part of responseParts(layout, from, to)) text += part;
  return text;
}

/** The parts of the response between `from` and `to`, one per piece it overlaps. */
function* responseParts(layout: ResponseLayout, from: number, to: number): Generator<string> {
  for (const piece of layout.pieces) {
    const length = piece.kind === 'text' ? piece.text.length : piece.length;
    const end = piece.start + length;
    if (end <= from) continue;
    if (piece.start >= to) break;
    const a = Math.max(from, piece.start) - piece.start;
    const b = Math.min(to, end) - piece.start;
    yield piece.kind === 'text' ? piece.text.slice(a, b) : FILLER.repeat(b - a);
  }
}

/**
 * The response from character `from` up to `to`, cut after the stop string that ends first
 * (`responseSlice` searched for `stops`, as an engine stops): built a piece at a time and
 * searched only where a new piece can complete a stop, so a turn does not build the rest of
 * a long response it will not return.
 */
export function responseUntilStop(
  layout: ResponseLayout,
  from: number,
  to: number,
  stops: readonly string[],
): { text: string; matchedStop: string | null } {
  let text = '';
  for (const part of responseParts(layout, from, to)) {
    const before = text.length;
    text += part;
    // No stop lay wholly in the text before this piece: a first match ends in the new part.
    let stopAt = text.length;
    let matchedStop: string | null = null;
    for (const stop of stops) {
      const index = stop === '' ? -1 : text.indexOf(stop, Math.max(0, before - stop.length + 1));
      if (index >= 0 && index + stop.length <= stopAt) {
        stopAt = index + stop.length;
        matchedStop = stop;
      }
    }
    if (matchedStop !== null) return { text: text.slice(0, stopAt), matchedStop };
  }
  return { text, matchedStop: null };
}

/** Where the first code block closing after `from` ends (exclusive), or null. */
export function nextCodeEnd(layout: ResponseLayout, from: number): number | null {
  for (const piece of layout.pieces) {
    if (piece.kind !== 'text' || !piece.text.endsWith('</code>')) continue;
    const end = piece.start + piece.text.length;
    if (end > from) return end;
  }
  return null;
}
