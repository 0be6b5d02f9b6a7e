/**
 * The agent loop's small state: the trajectory record being built, plus what is derived from
 * it and kept incrementally (the context as ids and text, token counts, the current turn's
 * text). `loopStateFrom` rebuilds it from a record, which is how a resumed trajectory
 * continues exactly where it stopped.
 */
import type { Tokenizer } from '../engine/tokenizer.ts';
import type { Segment, Trajectory } from '../trajectory/trajectory.ts';

export type LoopState = {
  trajectory: Trajectory;
  /** Token-level trajectories hold ids for the prompt and every segment; text-level ones hold none. */
  tokenLevel: boolean;
  /** Prompt plus every segment's ids (token-level only; empty otherwise). */
  contextTokenIds: number[];
  /** Prompt plus every segment's text. */
  contextText: string;
  contextTokens: number;
  /** Model text since the last tool result: a code block may span several engine calls. */
  turnText: string;
  /** Engine calls made so far in the whole trajectory. */
  turns: number;
  /** Model tokens generated and tool calls run in this segment (this run or resume call). */
  segmentTokens: number;
  segmentToolCalls: number;
  /** Counts tokens of a text in text-level trajectories (see `textTokenCounter`). */
  countText: (text: string) => number;
};

/**
 * Token counting for text-level trajectories, used only for budgets: the tokenizer's count
 * when there is one, else about four characters per token.
 */
export function textTokenCounter(tokenizer: Tokenizer | null): (text: string) => number {
  if (tokenizer !== null) return (text) => tokenizer.encode(text).length;
  return (text) => Math.ceil(text.length / 4);
}

/** The state for a record (new or resumed): everything derived from its prompt and segments. */
export function loopStateFrom(trajectory: Trajectory, tokenizer: Tokenizer | null): LoopState {
  const tokenLevel = trajectory.prompt.tokenIds !== null;
  const countText = textTokenCounter(tokenizer);
  const state: LoopState = {
    trajectory,
    tokenLevel,
    contextTokenIds: tokenLevel ? [...(trajectory.prompt.tokenIds ?? [])] : [],
    contextText: trajectory.prompt.text,
    contextTokens: tokenLevel ? (trajectory.prompt.tokenIds?.length ?? 0) : countText(trajectory.prompt.text),
    turnText: '',
    turns: 0,
    segmentTokens: 0,
    segmentToolCalls: 0,
    countText,
  };
  for (const segment of trajectory.segments) {
    addToContext(state, segment);
    if (segment.kind === 'model') {
      state.turns += 1;
      state.turnText += segment.text;
    } else {
      state.turnText = '';
    }
  }
  return state;
}

/** Appends a segment to the record and the derived context; returns its token count. */
export function appendSegment(state: LoopState, segment: Segment): number {
  state.trajectory.segments.push(segment);
  const tokens = addToContext(state, segment);
  if (segment.kind === 'model') {
    state.turns += 1;
    state.turnText += segment.text;
    state.segmentTokens += tokens;
  } else {
    state.turnText = '';
  }
  return tokens;
}

function addToContext(state: LoopState, segment: Segment): number {
  state.contextText += segment.text;
  let tokens: number;
  if (state.tokenLevel && segment.tokenIds !== null) {
    for (const id of segment.tokenIds) state.contextTokenIds.push(id);
    tokens = segment.tokenIds.length;
  } else {
    tokens = state.countText(segment.text);
  }
  state.contextTokens += tokens;
  return tokens;
}

/** The model's text over the whole response (tool output excluded). */
export function modelText(trajectory: Trajectory): string {
  let text = '';
  for (const segment of trajectory.segments) if (segment.kind === 'model') text += segment.text;
  return text;
}
